// hearth status: a running server's state at a glance, for an operator: the engine (policy,
// queue, batch, KV use, steps), rates over a short interval, and every tenant's queue, batch,
// outcomes and latency percentiles. It is the protocol's `stats` with `all` (admin tenants
// only under CURVE), read twice `--interval` apart for the rates; `--json` prints the second
// reply with the rates added.
// Exit codes: 0; 1 bad options or key file; 2 the server could not be reached; 3 it refused.
#include <cmath>
#include <cstdio>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/progress.hpp"
#include "cli/server_connection.hpp"

namespace hearth::cli {
namespace {

using json = nlohmann::json;

struct status_args {
  server_args server;
  uint32_t interval_ms = 1000;
  uint32_t timeout_ms = 5000;
  bool json_out = false;
};

double sum_over_tenants(const json& stats, const char* field) {
  double n = 0;
  for (const json& t : stats["tenants"]) n += t[field].get<double>();
  return n;
}

// Per second between two replies: finished requests, and tokens computed (prefill, decode).
json rates(const json& before, const json& after) {
  const double dt = after["uptime_s"].get<double>() - before["uptime_s"].get<double>();
  auto per_s = [&](double a, double b) { return dt > 0 ? (b - a) / dt : 0.0; };
  const json &e0 = before["engine"], &e1 = after["engine"];
  return {
      {"interval_s", dt},
      {"requests_per_s", per_s(sum_over_tenants(before, "done"), sum_over_tenants(after, "done"))},
      {"prefill_tokens_per_s", per_s(e0["prefill_tokens"].get<double>(), e1["prefill_tokens"].get<double>())},
      {"decode_tokens_per_s", per_s(e0["decode_tokens"].get<double>(), e1["decode_tokens"].get<double>())}};
}

std::string ms(const json& summary, const char* q) {
  if (summary["count"].get<uint64_t>() == 0) return "-";
  char text[16];
  std::snprintf(text, sizeof text, "%.0f", summary[q].get<double>());
  return text;
}

void print_text(const status_args& a, const json& s) {
  const json& e = s["engine"];
  const double used = e["kv_blocks_used"].get<double>(), total = e["kv_blocks_total"].get<double>();
  const double lookups = e["prefix_lookups"].get<double>();
  std::printf("hearth on %s: up %s, policy %s, mode %s\n", a.server.endpoint.c_str(),
              human_duration(s["uptime_s"].get<double>()).c_str(), e["policy"].get<std::string>().c_str(),
              e["limits"]["mode"].get<std::string>().c_str());
  std::printf(
      "engine: %u running, %u waiting; KV %.0f of %.0f blocks (%.0f %%); prefix hits %.0f %%; "
      "%llu steps, step p50 %s ms, p99 %s ms\n",
      e["running"].get<unsigned>(), e["waiting"].get<unsigned>(), used, total,
      total > 0 ? 100 * used / total : 0.0,
      lookups > 0 ? 100 * e["prefix_hits"].get<double>() / lookups : 0.0,
      e["steps"].get<unsigned long long>(), ms(e["per_step"]["step_ms"], "p50").c_str(),
      ms(e["per_step"]["step_ms"], "p99").c_str());
  if (s.contains("rates")) {
    const json& r = s["rates"];
    std::printf("rates over %.1f s: %.1f requests/s, prefill %.0f tok/s, decode %.0f tok/s\n",
                r["interval_s"].get<double>(), r["requests_per_s"].get<double>(),
                r["prefill_tokens_per_s"].get<double>(), r["decode_tokens_per_s"].get<double>());
  }
  std::printf("\n%-16s %5s %5s %7s %7s %5s %8s %9s %20s %14s\n", "tenant", "wait", "run", "done", "cancel",
              "err", "rejected", "tokens", "TTFT p50/p90/p99 ms", "ITL p50/p99 ms");
  for (const json& t : s["tenants"]) {
    uint64_t rejected = 0;
    for (const auto& [why, n] : t["rejected"].items()) rejected += n.get<uint64_t>();
    const std::string ttft =
        ms(t["ttft_ms"], "p50") + "/" + ms(t["ttft_ms"], "p90") + "/" + ms(t["ttft_ms"], "p99");
    const std::string itl = ms(t["itl_ms"], "p50") + "/" + ms(t["itl_ms"], "p99");
    std::printf(
        "%-16s %5u %5u %7llu %7llu %5llu %8llu %9llu %20s %14s\n", t["name"].get<std::string>().c_str(),
        t["waiting"].get<unsigned>(), t["running"].get<unsigned>(), t["done"].get<unsigned long long>(),
        t["cancelled"].get<unsigned long long>(), t["errors"].get<unsigned long long>(),
        static_cast<unsigned long long>(rejected),
        t["prompt_tokens"].get<unsigned long long>() + t["completion_tokens"].get<unsigned long long>(),
        ttft.c_str(), itl.c_str());
  }
  if (s["tenants"].empty()) std::printf("(no tenant has sent a request yet)\n");
}

int run_status(const status_args& a) {
  auto opt = client_options(a.server, std::chrono::milliseconds(a.timeout_ms));
  if (!opt) return fail(opt.error().message);
  opt->reply_timeout = std::chrono::milliseconds(a.timeout_ms);
  auto c = client::client::connect(*opt);
  if (!c) return report_connect(c.error());
  auto first = (*c)->stats(true);
  if (!first) return report(first.error());
  json now = *first;
  if (a.interval_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(a.interval_ms));
    auto second = (*c)->stats(true);
    if (!second) return report(second.error());
    now = *second;
    now["rates"] = rates(*first, now);
  }
  if (a.json_out)
    std::printf("%s\n", now.dump(2).c_str());
  else
    print_text(a, now);
  return 0;
}

}  // namespace

void add_status_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("status", "A running `hearth serve` at a glance: engine, rates, every tenant");
  auto a = std::make_shared<status_args>();
  add_server_options(cmd, a->server, "An admin tenant's key file from `hearth keygen` (CURVE)", "status");
  cmd->add_option("--interval", a->interval_ms,
                  "Milliseconds between the two readings the rates come from (0: none)")
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_ms, "Milliseconds to wait for the server")->capture_default_str();
  cmd->add_flag("--json", a->json_out, "Print the stats reply (with `rates`) as JSON");
  cmd->callback([a, &exit_code] { exit_code = run_status(*a); });
}

}  // namespace hearth::cli
