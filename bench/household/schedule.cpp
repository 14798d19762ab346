#include "bench/household/schedule.hpp"

#include <algorithm>

namespace hearth::household {

namespace {

// Independent streams from one class seed: arrivals, lengths, prompt texts.
uint64_t stream_seed(uint64_t seed, uint64_t stream) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + stream;
  return splitmix64(s);
}

}  // namespace

schedule_builder::schedule_builder(const workload& w, const tokenizer& tok, uint32_t n_ctx)
    : w_(&w), tok_(&tok), n_ctx_(n_ctx), synth_(tok), lengths_(w.classes.size()) {
  for (const auto& c : w.classes) length_rng_.emplace_back(stream_seed(c.seed, 2));
}

schedule_builder::planned schedule_builder::plan(uint32_t cls, size_t k) {
  auto& v = lengths_[cls];
  const workload_class& c = w_->classes[cls];
  while (v.size() <= k) {
    planned p;
    p.prompt = c.prompt.draw(length_rng_[cls]);
    p.output = c.output.draw(length_rng_[cls]);
    v.push_back(p);
  }
  return v[k];
}

result<const schedule_builder::prompt_text*> schedule_builder::text_of(uint32_t cls, size_t k,
                                                                       uint32_t n_tokens) {
  const auto key = std::pair{cls, k};
  if (auto it = texts_.find(key); it != texts_.end() && it->second.tokens.size() == n_tokens)
    return &it->second;
  const workload_class& c = w_->classes[cls];
  const uint32_t shared = c.shared_prefix < n_tokens ? c.shared_prefix : 0;
  auto text = synth_.make(n_tokens, stream_seed(c.seed, 3 + k), shared, stream_seed(c.seed, 1));
  if (!text) return error{errc::invalid_argument, "class '" + c.name + "': " + text.error().message};
  prompt_text p{std::move(*text), {}};
  p.tokens = tok_->encode(p.text, {.add_bos = true, .parse_special = false});
  return &(texts_[key] = std::move(p));
}

bench_request schedule_builder::make(uint32_t cls, double at_s, const prompt_text& p,
                                     uint32_t max_tokens) const {
  return {0, w_->classes[cls].name, at_s, p.text, p.tokens, max_tokens};
}

result<schedule> schedule_builder::generate(double rate_scale, double duration_s) {
  std::lock_guard lock(m_);
  struct arrival {
    double at_s;
    uint32_t cls;
    size_t k;
  };
  std::vector<arrival> all;
  for (uint32_t c = 0; c < w_->classes.size(); ++c) {
    arrival_process p = w_->classes[c].arrival;
    p.rate *= rate_scale;
    const auto times = arrival_times(p, duration_s, stream_seed(w_->classes[c].seed, 0));
    for (size_t k = 0; k < times.size(); ++k) all.push_back({times[k], c, k});
  }
  std::ranges::stable_sort(all, {}, &arrival::at_s);
  schedule s;
  for (const arrival& a : all) {
    planned p = plan(a.cls, a.k);
    if (n_ctx_ > 0 && p.prompt + p.output > n_ctx_) {
      p.output = std::min(p.output, n_ctx_ / 2);
      p.prompt = std::min(p.prompt, n_ctx_ - p.output);
      ++s.clamped;
    }
    auto text = text_of(a.cls, a.k, p.prompt);
    if (!text) return text.error();
    s.requests.push_back(make(a.cls, a.at_s, **text, p.output));
    s.cls.push_back(a.cls);
  }
  for (size_t i = 0; i < s.requests.size(); ++i) s.requests[i].index = i;
  return s;
}

result<schedule> schedule_builder::replay(const std::vector<trace_entry>& trace) {
  std::lock_guard lock(m_);
  schedule s;
  std::vector<size_t> next_k(w_->classes.size(), 0);
  for (const trace_entry& e : trace) {
    const workload_class* c = w_->find(e.tenant);
    if (!c)
      return error{errc::invalid_argument, "trace: tenant '" + e.tenant + "' is not a class of the workload"};
    const auto cls = static_cast<uint32_t>(c - w_->classes.data());
    if (e.prompt) {
      prompt_text p{*e.prompt, tok_->encode(*e.prompt, {.add_bos = true, .parse_special = false})};
      s.requests.push_back(make(cls, e.time_s, p, e.max_tokens));
    } else {
      auto text = text_of(cls, next_k[cls]++, e.prompt_tokens);
      if (!text) return text.error();
      s.requests.push_back(make(cls, e.time_s, **text, e.max_tokens));
    }
    s.cls.push_back(cls);
  }
  for (size_t i = 0; i < s.requests.size(); ++i) s.requests[i].index = i;
  return s;
}

}  // namespace hearth::household
