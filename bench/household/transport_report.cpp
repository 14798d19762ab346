#include "bench/household/transport_report.hpp"

#include <map>

#include "bench/household/report.hpp"

namespace hearth::household {

std::vector<transport_figures> compare_transports(std::span<const run_result> runs,
                                                  std::span<const std::vector<uint8_t>> lanes,
                                                  const std::vector<std::string>& names) {
  std::vector<std::map<size_t, double>> ttft_of(names.size());  // per lane: request index -> TTFT
  std::vector<transport_figures> out;
  for (size_t lane = 0; lane < names.size(); ++lane) {
    std::vector<double> ttft, server, outside;
    for (size_t r = 0; r < runs.size(); ++r)
      for (const bench_record& rec : runs[r].records) {
        if (lanes[r][rec.index] != lane || rec.kind != event_kind::done || !rec.ended() ||
            rec.token_s.empty())
          continue;
        ttft.push_back(rec.ttft_ms());
        ttft_of[lane][rec.index] = rec.ttft_ms();
        // A server that sends no timings (0) tells nothing about the part outside it.
        if (rec.server.ttft_ms <= 0) continue;
        server.push_back(rec.server.ttft_ms);
        outside.push_back(rec.ttft_ms() - rec.server.ttft_ms);
      }
    std::vector<double> diff;
    for (const auto& [index, t] : ttft_of[lane])
      if (const auto first = ttft_of[0].find(index); lane > 0 && first != ttft_of[0].end())
        diff.push_back(t - first->second);
    out.push_back(
        {names[lane], ttft.size(), summarize(ttft), summarize(server), summarize(outside), summarize(diff)});
  }
  return out;
}

void print_transports(const std::vector<transport_figures>& t, std::FILE* out) {
  std::fprintf(out, "\ngateways (each carried every request once, on a fresh server), ms:\n");
  std::fprintf(out, "  %-6s %6s  %9s %9s  %10s  %12s %9s\n", "", "done", "TTFT p50", "p90", "server p50",
               "outside p50", "p90");
  for (const transport_figures& f : t)
    std::fprintf(out, "  %-6s %6llu  %9.2f %9.2f  %10.2f  %12.3f %9.3f\n", f.name.c_str(),
                 static_cast<unsigned long long>(f.done), f.ttft_ms.p50, f.ttft_ms.p90, f.server_ttft_ms.p50,
                 f.outside_ms.p50, f.outside_ms.p90);
  for (size_t i = 1; i < t.size(); ++i)
    std::fprintf(out,
                 "  %s - %s: TTFT p50 %+.2f ms (per request: p50 %+.2f ms over %llu requests); outside the "
                 "engine p50 %+.3f ms\n",
                 t[i].name.c_str(), t[0].name.c_str(), t[i].ttft_ms.p50 - t[0].ttft_ms.p50,
                 t[i].ttft_diff_ms.p50, static_cast<unsigned long long>(t[i].ttft_diff_ms.count),
                 t[i].outside_ms.p50 - t[0].outside_ms.p50);
}

nlohmann::json to_json(const std::vector<transport_figures>& t) {
  nlohmann::json j = nlohmann::json::array();
  for (const transport_figures& f : t)
    j.push_back({{"name", f.name},
                 {"done", f.done},
                 {"ttft_ms", to_json(f.ttft_ms)},
                 {"server_ttft_ms", to_json(f.server_ttft_ms)},
                 {"outside_engine_ms", to_json(f.outside_ms)},
                 {"ttft_minus_first_ms", to_json(f.ttft_diff_ms)}});
  return j;
}

}  // namespace hearth::household
