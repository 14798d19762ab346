#include "kernels/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/rng.hpp"

namespace hearth {

namespace {

error invalid(const char* field, const char* rule, float got) {
  return error{errc::invalid_argument,
               std::string("sampling: ") + field + " must be " + rule + ", got " + std::to_string(got)};
}

// NaN would break the ordering the filters sort by: it becomes the least likely token. +inf
// becomes the largest float so that differences of logits stay finite.
float sanitize(float logit) {
  if (std::isnan(logit)) return -std::numeric_limits<float>::infinity();
  return std::min(logit, std::numeric_limits<float>::max());
}

struct candidate {
  token_id id;
  float logit;
};

// Scratch shared by every sampler on a thread: (n_vocab,) candidates, sorted by logit,
// descending, after keep_top_k; and the penalty's distinct recent tokens.
struct scratch {
  std::vector<candidate> cands;
  std::vector<token_id> recent;
};

scratch& thread_scratch() {
  thread_local scratch s;
  return s;
}

void apply_penalty(const sampling_params& p, std::span<const token_id> history, scratch& s) {
  if (p.repetition_penalty == 1.0f) return;
  // Each distinct recent token is penalised once, however often it occurred (as llama.cpp does).
  const size_t n = std::min<size_t>(p.repeat_last_n, history.size());
  s.recent.assign(history.end() - static_cast<ptrdiff_t>(n), history.end());
  std::sort(s.recent.begin(), s.recent.end());
  s.recent.erase(std::unique(s.recent.begin(), s.recent.end()), s.recent.end());
  const float pen = p.repetition_penalty;
  for (token_id id : s.recent) {
    if (id < 0 || static_cast<size_t>(id) >= s.cands.size()) continue;
    float& l = s.cands[static_cast<size_t>(id)].logit;  // cands is still indexed by id here
    l = l > 0.0f ? l / pen : l * pen;
  }
}

void keep_top_k(uint32_t top_k, std::vector<candidate>& cands) {
  // Sorted by logit, descending, ties by id: every later step and the draw rely on this order.
  auto by_logit = [](const candidate& a, const candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (top_k > 0 && top_k < cands.size()) {
    std::partial_sort(cands.begin(), cands.begin() + top_k, cands.end(), by_logit);
    cands.resize(top_k);
  } else {
    std::sort(cands.begin(), cands.end(), by_logit);
  }
}

void keep_top_p(float top_p, std::vector<candidate>& cands) {
  if (top_p >= 1.0f) return;
  const double top = cands.front().logit;
  double total = 0.0;
  for (const candidate& c : cands) total += std::exp(c.logit - top);
  // The smallest prefix whose probability reaches top_p; rounding may leave it at all of them.
  double cum = 0.0;
  size_t keep = 0;
  while (keep < cands.size() && cum < top_p) {
    cum += std::exp(cands[keep++].logit - top) / total;
  }
  cands.resize(keep);
}

void keep_min_p(float min_p, std::vector<candidate>& cands) {
  if (min_p <= 0.0f) return;
  // p_i >= min_p * p_max  <=>  logit_i >= logit_max + log(min_p); the top token always stays.
  const double threshold = cands.front().logit + std::log(static_cast<double>(min_p));
  auto first_out =
      std::find_if(cands.begin() + 1, cands.end(), [&](const candidate& c) { return c.logit < threshold; });
  cands.erase(first_out, cands.end());
}

// u in [0, 1): the draw's random number.
token_id draw(double temperature, double u, const std::vector<candidate>& cands) {
  // Temperature applied in double: (l - l_max) / T cannot overflow even for extreme logits.
  const double top = cands.front().logit;
  double total = 0.0;
  for (const candidate& c : cands) total += std::exp((c.logit - top) / temperature);
  const double target = u * total;
  double cum = 0.0;
  for (const candidate& c : cands) {
    cum += std::exp((c.logit - top) / temperature);
    if (target < cum) return c.id;
  }
  return cands.back().id;  // target within rounding of the total
}

// The k-th draw's random number: one fresh stream per (seed, k).
double draw_unit(uint64_t seed, uint64_t k) {
  uint64_t mix = k;
  return rng(seed ^ splitmix64(mix)).unit();
}

}  // namespace

result<sampler> sampler::create(const sampling_params& p, uint64_t first_draw) {
  // Written so that NaN fails every check.
  if (!(p.temperature >= 0.0f && std::isfinite(p.temperature))) {
    return invalid("temperature", "finite and >= 0", p.temperature);
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return invalid("top_p", "in (0, 1]", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p < 1.0f)) return invalid("min_p", "in [0, 1)", p.min_p);
  if (!(p.repetition_penalty > 0.0f && std::isfinite(p.repetition_penalty))) {
    return invalid("repetition_penalty", "finite and > 0", p.repetition_penalty);
  }
  return sampler(p, first_draw);
}

token_id sampler::sample(std::span<const float> logits, std::span<const token_id> history) {
  if (logits.empty()) return no_token;
  const uint64_t k = next_draw_++;
  scratch& s = thread_scratch();
  s.cands.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    s.cands[i] = {static_cast<token_id>(i), sanitize(logits[i])};
  }
  for (token_id b : params_.banned)
    if (b >= 0 && static_cast<size_t>(b) < s.cands.size())
      s.cands[static_cast<size_t>(b)].logit = -std::numeric_limits<float>::infinity();
  apply_penalty(params_, history, s);
  if (params_.temperature == 0.0f) {
    // max_element keeps the first of equal maxima: the lowest id.
    auto by_logit = [](const candidate& a, const candidate& b) { return a.logit < b.logit; };
    return std::max_element(s.cands.begin(), s.cands.end(), by_logit)->id;
  }
  keep_top_k(params_.top_k, s.cands);
  // Every logit -inf (or NaN): there is nothing to weigh, so take the first in order.
  if (s.cands.front().logit == -std::numeric_limits<float>::infinity()) return s.cands.front().id;
  keep_top_p(params_.top_p, s.cands);
  keep_min_p(params_.min_p, s.cands);
  return draw(params_.temperature, draw_unit(params_.seed, k), s.cands);
}

}  // namespace hearth
