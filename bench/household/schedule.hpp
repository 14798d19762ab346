#pragma once
// The plan of one run, made before it starts: every request's arrival time, class, prompt text
// (and its tokens) and max_tokens, from the workload's generators or from a trace. Request k of a
// class is the same request at every rate (its lengths and text come from the class's seed and
// k; only arrival times scale), so a sweep compares rates on the same requests, and each prompt
// is synthesised once.

#include <map>
#include <mutex>
#include <vector>

#include "bench/household/prompt_synth.hpp"
#include "bench/household/target.hpp"
#include "bench/household/trace.hpp"
#include "bench/household/workload.hpp"

namespace hearth::household {

struct schedule {
  std::vector<bench_request> requests;  //!< by arrival time; requests[i].index == i
  std::vector<uint32_t> cls;            //!< each request's class (index into the workload's)
  uint32_t clamped = 0;                 //!< requests shortened to fit the model's context
};

class schedule_builder {
 public:
  //! n_ctx: the model's context; a planned prompt + output longer than it is shortened
  //! (output to at most half the context, then the prompt), and counted.
  schedule_builder(const workload& w, const tokenizer& tok, uint32_t n_ctx);

  //! Arrivals of every class at rate_scale times its rate, in [0, duration_s).
  result<schedule> generate(double rate_scale, double duration_s);
  //! The trace's requests; their tenants must be classes of the workload.
  result<schedule> replay(const std::vector<trace_entry>& trace);

 private:
  struct planned {
    uint32_t prompt = 0, output = 0;
  };
  struct prompt_text {
    std::string text;
    std::vector<token_id> tokens;
  };
  planned plan(uint32_t cls, size_t k);
  result<const prompt_text*> text_of(uint32_t cls, size_t k, uint32_t n_tokens);
  bench_request make(uint32_t cls, double at_s, const prompt_text& p, uint32_t max_tokens) const;

  std::mutex m_;  // one schedule at a time: a parallel sweep's trials share the prompts
  const workload* w_;
  const tokenizer* tok_;
  uint32_t n_ctx_;
  prompt_synth synth_;
  std::vector<std::vector<planned>> lengths_;  // per class, request k's lengths, drawn in order
  std::vector<rng> length_rng_;
  std::map<std::pair<uint32_t, size_t>, prompt_text> texts_;
};

}  // namespace hearth::household
