// Stream protection shared by slo and household; see stream_guard.hpp and docs/policies.md.
#include "policies/stream_guard.hpp"

#include <algorithm>
#include <cmath>

namespace hearth::policy_detail {

namespace {

// The decodes of the next step, the attention they do, and the ITL targets they keep.
struct decode_load {
  uint32_t decodes = 0;
  double kpairs = 0;                    //!< thousands of (query, key) pairs
  double tightest_itl_ms = no_target;   //!< among all streams
  double strictest_itl_ms = no_target;  //!< among streams that cannot afford a long gap
};

// Standard deviations of the step-time model's relative error kept in reserve: with normal
// errors, 98 % of steps planned to a target keep it (1.5, 93 % in theory, let 6-8 % of the
// household bench's mixed steps overshoot; docs/policies.md).
constexpr double error_margin = 2.0;

// Whether one more long gap keeps r within its quantile even if every gap after it is short:
// the stream has earned it with the short gaps behind it. The bench judges a stream of n gaps by
// its q-quantile interpolated at (n - 1) q, which ignores any size of the largest
// floor((n - 1)(1 - q)) gaps: after this step n = gaps + 1.
bool can_afford_long_gap(const request_view& r, const tenant_view& t) {
  const double allowed = (1 - t.itl_quantile) * r.itl_gaps;
  return r.itl_misses + 1 <= allowed + 1e-9;
}

decode_load decode_load_of(const policy_snapshot& s) {
  decode_load load;
  for (const request_view& r : s.running) {
    if (r.generated_tokens == 0) continue;  // still in its prompt: no tokens to space out yet
    ++load.decodes;
    load.kpairs += (r.computed_tokens + 1) / 1000.0;
    const tenant_view& t = tenant_of(s, r);
    if (t.itl_ms <= 0) continue;
    load.tightest_itl_ms = std::min(load.tightest_itl_ms, t.itl_ms);
    if (!can_afford_long_gap(r, t)) load.strictest_itl_ms = std::min(load.strictest_itl_ms, t.itl_ms);
  }
  return load;
}

// The prefill cost of n tokens starting at position `depth`: each costs per_token, and attends
// to every key before it (per_kpair per thousand): a n^2 + b n.
struct prefill_cost {
  double a, b;
  prefill_cost(const step_time_model& m, double depth)
      : a(m.per_kpair_ms / 2000), b(m.per_token_ms + m.per_kpair_ms * (depth + 0.5) / 1000) {}
  double ms(double n) const { return a * n * n + b * n; }
  //! The most tokens that fit in spare_ms: the root in the form that does not cancel when a is
  //! tiny (and is spare / b when a = 0).
  double tokens_within(double spare_ms) const {
    return spare_ms <= 0 ? 0 : 2 * spare_ms / (b + std::sqrt(b * b + 4 * a * spare_ms));
  }
};

double prompt_left(const request_view& r) {
  const uint32_t total = r.prompt_tokens + r.generated_tokens;
  return total > r.computed_tokens ? total - r.computed_tokens : 0;
}

}  // namespace

double deadline_of(const policy_snapshot& s, const request_view& r) {
  const double ttft_ms = tenant_of(s, r).ttft_ms;
  return ttft_ms > 0 ? r.arrival_s + ttft_ms / 1000.0 : no_target;
}

// Whether r can still get its first token by its deadline: its remaining prefill, at full speed
// from now, ends before it.
bool can_make(const policy_snapshot& s, const request_view& r, double deadline_s) {
  return s.now_s + prefill_cost(s.step_time, r.computed_tokens).ms(prompt_left(r)) / 1000 <= deadline_s;
}

namespace {

// Half the tightest TTFT target among the tenants: a request that arrives while a step runs
// waits for it before its own prefill can start.
double step_ceiling_ms(const policy_snapshot& s) {
  double tightest = no_target;
  for (const tenant_view& t : s.tenants)
    if (t.ttft_ms > 0) tightest = std::min(tightest, t.ttft_ms);
  return tightest / 2;
}

// The prefill tokens of r that fit in a step of step_ms beside the decodes: the model's recent
// error is kept in reserve, so that most steps, not half, keep the target. One sequence more
// than is running: the prefill may start a new request.
double chunk_within(const policy_snapshot& s, const decode_load& load, const request_view* first,
                    double step_ms) {
  const double seqs = static_cast<double>(s.running.size()) + 1;
  const double spare_ms = step_ms / (1 + error_margin * s.step_time.error_ratio) -
                          s.step_time.predict_ms(load.decodes, seqs, load.kpairs);
  // Deep in a long prompt, each token attends to more keys.
  const double fits = prefill_cost(s.step_time, first ? first->computed_tokens : 0.0).tokens_within(spare_ms);
  // The slack keeps a quotient like 1735.9999... (86.8 / 0.05) from losing a whole token.
  return std::floor(fits + 1e-9 * std::max(1.0, fits));
}

// Whether r, served in steps of step_ms, gets its first token after its deadline when at full
// speed it would not: the one case worth a long gap of the streams that can afford one.
bool needs_long_steps(const policy_snapshot& s, const decode_load& load, const request_view& r,
                      double step_ms) {
  const double deadline = deadline_of(s, r);
  if (deadline == no_target || !can_make(s, r, deadline)) return false;
  const double chunk = chunk_within(s, load, &r, step_ms);
  if (chunk < 1) return true;
  return s.now_s + std::ceil(prompt_left(r) / chunk) * step_ms / 1000 > deadline;
}

}  // namespace

std::optional<uint32_t> stream_guard_cap(const policy_snapshot& s, const request_view* first,
                                         uint32_t min_prefill_tokens) {
  const decode_load load = decode_load_of(s);
  // Without a measured cost per token there is nothing to solve.
  const bool measured = s.step_time.per_token_ms > 0 || s.step_time.per_kpair_ms > 0;
  if (!measured) return std::nullopt;
  const double ceiling_ms = step_ceiling_ms(s);
  double step_ms = std::min(load.tightest_itl_ms, ceiling_ms);
  // Streams spend a long gap they can afford only on a prompt that would otherwise miss its
  // deadline: a background summary with 30 s of slack does not take a voice turn's allowance.
  if (first && step_ms < ceiling_ms && needs_long_steps(s, load, *first, step_ms))
    step_ms = std::min(load.strictest_itl_ms, ceiling_ms);
  if (step_ms == no_target) return std::nullopt;
  const double tokens = chunk_within(s, load, first, step_ms);
  const double most = s.max_batched_tokens > 0 ? s.max_batched_tokens : std::numeric_limits<uint32_t>::max();
  return static_cast<uint32_t>(std::clamp(tokens, static_cast<double>(min_prefill_tokens),
                                          std::max(most, static_cast<double>(min_prefill_tokens))));
}

}  // namespace hearth::policy_detail
