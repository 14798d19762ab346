#include "bench/household/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hearth::household {

double percentile(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0;
  const double h = static_cast<double>(sorted.size() - 1) * std::clamp(p, 0.0, 1.0);
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

dist_summary summarize(std::vector<double>& x) {
  if (x.empty()) return {};
  std::ranges::sort(x);
  const double sum = std::accumulate(x.begin(), x.end(), 0.0);
  return {x.size(),
          sum / static_cast<double>(x.size()),
          percentile(x, 0.5),
          percentile(x, 0.9),
          percentile(x, 0.99),
          x.back()};
}

std::vector<double> bench_record::gaps_ms() const {
  std::vector<double> g;
  for (size_t i = 1; i < token_s.size(); ++i) g.push_back(1e3 * (token_s[i] - token_s[i - 1]));
  return g;
}

bool meets_slo(const bench_record& r, const slo_target& slo) {
  if (r.kind != event_kind::done || !r.ended() || r.token_s.empty()) return false;
  if (slo.ttft_ms > 0 && r.ttft_ms() > slo.ttft_ms) return false;
  if (slo.itl_ms <= 0) return true;
  std::vector<double> gaps = r.gaps_ms();
  std::ranges::sort(gaps);
  return gaps.empty() || percentile(gaps, slo.itl_quantile) <= slo.itl_ms;
}

group_report summarize_group(std::string name, std::span<const bench_record* const> records,
                             std::span<const slo_target* const> slos, double duration_s) {
  group_report g;
  g.name = std::move(name);
  if (!slos.empty()) g.slo = *slos.front();
  std::vector<double> ttft, itl, tpot, e2e, queue, prefill, first_step;
  for (size_t i = 0; i < records.size(); ++i) {
    const bench_record& r = *records[i];
    ++g.issued;
    g.preemptions += r.preemptions;
    if (meets_slo(r, *slos[i])) ++g.met_slo;
    if (!r.ended()) {
      ++g.unfinished;
      continue;
    }
    switch (r.kind) {
      case event_kind::done:
        ++g.done;
        break;
      case event_kind::cancelled:
        ++g.cancelled;
        break;
      case event_kind::rejected:
        ++g.rejected[static_cast<size_t>(r.reason)];
        break;
      default:
        ++g.errors;
        break;
    }
    if (r.kind != event_kind::done) continue;
    g.prompt_tokens += r.use.prompt_tokens;
    g.output_tokens += r.use.completion_tokens;
    e2e.push_back(1e3 * (r.end_s - r.arrival_s));
    if (r.token_s.empty()) continue;
    ttft.push_back(r.ttft_ms());
    for (double gap : r.gaps_ms()) itl.push_back(gap);
    if (r.token_s.size() > 1)
      tpot.push_back(1e3 * (r.token_s.back() - r.token_s.front()) /
                     static_cast<double>(r.token_s.size() - 1));
    queue.push_back(r.server.queue_ms);
    prefill.push_back(r.server.prefill_ms);
    first_step.push_back(r.server.first_step_ms);
  }
  g.ttft_ms = summarize(ttft);
  g.itl_ms = summarize(itl);
  g.tpot_ms = summarize(tpot);
  g.e2e_ms = summarize(e2e);
  g.queue_ms = summarize(queue);
  g.prefill_ms = summarize(prefill);
  g.first_step_ms = summarize(first_step);
  g.request_throughput = static_cast<double>(g.done) / duration_s;
  g.prompt_throughput = static_cast<double>(g.prompt_tokens) / duration_s;
  g.output_throughput = static_cast<double>(g.output_tokens) / duration_s;
  g.goodput = static_cast<double>(g.met_slo) / duration_s;
  g.attainment = g.issued ? static_cast<double>(g.met_slo) / static_cast<double>(g.issued) : 0;
  return g;
}

}  // namespace hearth::household
