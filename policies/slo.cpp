// slo: earliest TTFT deadline first, decode protection; see slo.hpp and docs/policies.md.
#include "policies/slo.hpp"

#include <cmath>
#include <limits>

#include "policies/ordering.hpp"

namespace hearth {

using namespace policy_detail;

namespace {

constexpr double no_target = std::numeric_limits<double>::infinity();

// The decodes of the next step and the ITL target they must keep.
struct decode_load {
  uint32_t decodes = 0;
  double tightest_itl_ms = no_target;  //!< among streams that cannot afford a long gap
};

// Whether one more long gap keeps r within its quantile even if every gap after it is short:
// the stream has earned it with the short gaps behind it.
bool can_afford_long_gap(const request_view& r, const tenant_view& t) {
  const double allowed = (1 - t.itl_quantile) * (r.itl_gaps + 1);
  return r.itl_misses + 1 <= allowed + 1e-9;
}

decode_load decode_load_of(const policy_snapshot& s) {
  decode_load load;
  for (const request_view& r : s.running) {
    if (r.generated_tokens == 0) continue;  // still in its prompt: no tokens to space out yet
    ++load.decodes;
    const tenant_view& t = tenant_of(s, r);
    if (t.itl_ms > 0 && !can_afford_long_gap(r, t)) load.tightest_itl_ms = std::min(load.tightest_itl_ms, t.itl_ms);
  }
  return load;
}

}  // namespace

std::vector<uint32_t> slo_policy::order_waiting(const policy_snapshot& s) const {
  return order_by(s.waiting, [&](const request_view& r) {
    const double ttft_ms = tenant_of(s, r).ttft_ms;
    return ttft_ms > 0 ? std::pair(0, r.arrival_s + ttft_ms / 1000.0) : std::pair(1, r.arrival_s);
  });
}

uint32_t slo_policy::pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const {
  return last_by(s.running, candidates, [&](const request_view& r) {
    const double itl_ms = tenant_of(s, r).itl_ms;
    return itl_ms > 0 ? itl_ms : no_target;
  });
}

std::optional<uint32_t> slo_policy::prefill_cap(const policy_snapshot& s) const {
  const decode_load load = decode_load_of(s);
  // Without a target to keep, or without a measured cost per token, there is nothing to solve.
  if (load.tightest_itl_ms == no_target || s.step_time.per_token_ms <= 0) return std::nullopt;
  // One sequence more than is running: the prefill may start a new request.
  const double seqs = static_cast<double>(s.running.size()) + 1;
  const double spare_ms = load.tightest_itl_ms - s.step_time.predict_ms(load.decodes, seqs);
  // The slack keeps a quotient like 1735.9999... (86.8 / 0.05) from losing a whole token.
  const double tokens = std::floor(spare_ms / s.step_time.per_token_ms + 1e-9);
  const double most = s.max_batched_tokens > 0 ? s.max_batched_tokens : std::numeric_limits<uint32_t>::max();
  return static_cast<uint32_t>(std::clamp(tokens, static_cast<double>(min_prefill_tokens_),
                                          std::max(most, static_cast<double>(min_prefill_tokens_))));
}

}  // namespace hearth
