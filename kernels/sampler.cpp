#include "kernels/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace hearth {

namespace {

error invalid(const char* field, const char* rule, float got) {
  return error{errc::invalid_argument, std::string("sampling: ") + field + " must be " + rule +
                                           ", got " + std::to_string(got)};
}

// NaN would break the ordering the filters sort by: it becomes the least likely token. +inf
// becomes the largest float so that differences of logits stay finite.
float sanitize(float logit) {
  if (std::isnan(logit)) return -std::numeric_limits<float>::infinity();
  return std::min(logit, std::numeric_limits<float>::max());
}

}  // namespace

result<sampler> sampler::create(const sampling_params& p) {
  // Written so that NaN fails every check.
  if (!(p.temperature >= 0.0f && std::isfinite(p.temperature))) {
    return invalid("temperature", "finite and >= 0", p.temperature);
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return invalid("top_p", "in (0, 1]", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p < 1.0f)) return invalid("min_p", "in [0, 1)", p.min_p);
  if (!(p.repetition_penalty > 0.0f && std::isfinite(p.repetition_penalty))) {
    return invalid("repetition_penalty", "finite and > 0", p.repetition_penalty);
  }
  return sampler(p);
}

sampler::sampler(const sampling_params& params) : params_(params), rng_(params.seed) {}

token_id sampler::sample(std::span<const float> logits, std::span<const token_id> history) {
  if (logits.empty()) return no_token;
  cands_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    cands_[i] = {static_cast<token_id>(i), sanitize(logits[i])};
  }
  apply_penalty(history);
  if (params_.temperature == 0.0f) {
    // max_element keeps the first of equal maxima: the lowest id.
    auto by_logit = [](const candidate& a, const candidate& b) { return a.logit < b.logit; };
    return std::max_element(cands_.begin(), cands_.end(), by_logit)->id;
  }
  keep_top_k();
  // Every logit -inf (or NaN): there is nothing to weigh, so take the first in order.
  if (cands_.front().logit == -std::numeric_limits<float>::infinity()) return cands_.front().id;
  keep_top_p();
  keep_min_p();
  return draw();
}

void sampler::apply_penalty(std::span<const token_id> history) {
  if (params_.repetition_penalty == 1.0f) return;
  // Each distinct recent token is penalised once, however often it occurred (as llama.cpp does).
  const size_t n = std::min<size_t>(params_.repeat_last_n, history.size());
  recent_.assign(history.end() - static_cast<ptrdiff_t>(n), history.end());
  std::sort(recent_.begin(), recent_.end());
  recent_.erase(std::unique(recent_.begin(), recent_.end()), recent_.end());
  const float p = params_.repetition_penalty;
  for (token_id id : recent_) {
    if (id < 0 || static_cast<size_t>(id) >= cands_.size()) continue;
    float& l = cands_[static_cast<size_t>(id)].logit;  // cands_ is still indexed by id here
    l = l > 0.0f ? l / p : l * p;
  }
}

void sampler::keep_top_k() {
  // Sorted by logit, descending, ties by id: every later step and the draw rely on this order.
  auto by_logit = [](const candidate& a, const candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params_.top_k > 0 && params_.top_k < cands_.size()) {
    std::partial_sort(cands_.begin(), cands_.begin() + params_.top_k, cands_.end(), by_logit);
    cands_.resize(params_.top_k);
  } else {
    std::sort(cands_.begin(), cands_.end(), by_logit);
  }
}

void sampler::keep_top_p() {
  if (params_.top_p >= 1.0f) return;
  const double top = cands_.front().logit;
  double total = 0.0;
  for (const candidate& c : cands_) total += std::exp(c.logit - top);
  // The smallest prefix whose probability reaches top_p; rounding may leave it at all of them.
  double cum = 0.0;
  size_t keep = 0;
  while (keep < cands_.size() && cum < params_.top_p) {
    cum += std::exp(cands_[keep++].logit - top) / total;
  }
  cands_.resize(keep);
}

void sampler::keep_min_p() {
  if (params_.min_p <= 0.0f) return;
  // p_i >= min_p * p_max  <=>  logit_i >= logit_max + log(min_p); the top token always stays.
  const double threshold = cands_.front().logit + std::log(static_cast<double>(params_.min_p));
  auto first_out = std::find_if(cands_.begin() + 1, cands_.end(),
                                [&](const candidate& c) { return c.logit < threshold; });
  cands_.erase(first_out, cands_.end());
}

token_id sampler::draw() {
  // Temperature applied in double: (l - l_max) / T cannot overflow even for extreme logits.
  const double top = cands_.front().logit;
  const double temp = params_.temperature;
  double total = 0.0;
  for (const candidate& c : cands_) total += std::exp((c.logit - top) / temp);
  const double u = rng_.unit() * total;
  double cum = 0.0;
  for (const candidate& c : cands_) {
    cum += std::exp((c.logit - top) / temp);
    if (u < cum) return c.id;
  }
  return cands_.back().id;  // u within rounding of the total
}

}  // namespace hearth
