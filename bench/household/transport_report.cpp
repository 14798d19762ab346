#include "bench/household/transport_report.hpp"

#include "bench/household/report.hpp"

namespace hearth::household {

std::vector<transport_figures> compare_transports(const run_result& run, const std::vector<uint8_t>& lane_of,
                                                  const std::vector<std::string>& names) {
  std::vector<transport_figures> out;
  for (size_t lane = 0; lane < names.size(); ++lane) {
    std::vector<double> ttft, server, outside;
    for (const bench_record& r : run.records) {
      if (lane_of[r.index] != lane || r.kind != event_kind::done || !r.ended() || r.token_s.empty()) continue;
      ttft.push_back(r.ttft_ms());
      // A server that sends no timings (0) tells nothing about the part outside it.
      if (r.server.ttft_ms <= 0) continue;
      server.push_back(r.server.ttft_ms);
      outside.push_back(r.ttft_ms() - r.server.ttft_ms);
    }
    out.push_back({names[lane], ttft.size(), summarize(ttft), summarize(server), summarize(outside)});
  }
  return out;
}

void print_transports(const std::vector<transport_figures>& t, std::FILE* out) {
  std::fprintf(out, "\ngateways (alternate requests of each class), ms:\n");
  std::fprintf(out, "  %-6s %6s  %9s %9s  %12s  %16s %9s\n", "", "done", "TTFT p50", "p90", "server p50",
               "outside p50", "p90");
  for (const transport_figures& f : t)
    std::fprintf(out, "  %-6s %6llu  %9.2f %9.2f  %12.2f  %16.3f %9.3f\n", f.name.c_str(),
                 static_cast<unsigned long long>(f.done), f.ttft_ms.p50, f.ttft_ms.p90, f.server_ttft_ms.p50,
                 f.outside_ms.p50, f.outside_ms.p90);
  for (size_t i = 1; i < t.size(); ++i)
    std::fprintf(out, "  %s - %s: TTFT p50 %+.2f ms; outside the engine p50 %+.3f ms\n", t[i].name.c_str(),
                 t[0].name.c_str(), t[i].ttft_ms.p50 - t[0].ttft_ms.p50,
                 t[i].outside_ms.p50 - t[0].outside_ms.p50);
}

nlohmann::json to_json(const std::vector<transport_figures>& t) {
  nlohmann::json j = nlohmann::json::array();
  for (const transport_figures& f : t)
    j.push_back({{"name", f.name},
                 {"done", f.done},
                 {"ttft_ms", to_json(f.ttft_ms)},
                 {"server_ttft_ms", to_json(f.server_ttft_ms)},
                 {"outside_engine_ms", to_json(f.outside_ms)}});
  return j;
}

}  // namespace hearth::household
