#pragma once
// Picking the next token from logits, with llama.cpp's default chain of filters:
//   repetition penalty -> top_k -> top_p -> min_p -> temperature -> draw
// (temperature 0 stops after the penalty and takes the argmax, lowest id on ties).
// top_p and min_p see probabilities at temperature 1, as in that chain. The random number of a
// request's k-th draw is a function of (seed, k) alone, so a seed replays the same tokens for the
// same logits, and any worker can draw any token of a request: a request handed from a prefill
// worker to a decode worker, or preempted and recomputed, samples exactly as if it never moved.
// A sampler is a small value (its scratch is per thread), cheap to make for every step.

#include <cstdint>
#include <span>

#include "common/result.hpp"
#include "model/vocab.hpp"

namespace hearth {

struct sampling_params {
  float temperature = 1.0f;           //!< 0 = greedy; otherwise logits are divided by it
  uint32_t top_k = 0;                 //!< keep the k most likely tokens; 0 = off
  float top_p = 1.0f;                 //!< keep the smallest set whose probability reaches p; 1 = off
  float min_p = 0.0f;                 //!< drop tokens below min_p * the top probability; 0 = off
  float repetition_penalty = 1.0f;    //!< logit > 0 ? logit / p : logit * p; 1 = off
  uint32_t repeat_last_n = 64;        //!< how many trailing history tokens the penalty looks at
  uint64_t seed = 0;                  //!< seeds the sampler's own random stream
  std::vector<token_id> banned = {};  //!< never drawn (a request's ignore_eos: its end-of-generation tokens)
};

class sampler {
 public:
  //! Checks the parameters; errc::invalid_argument naming the first field out of range.
  //! `first_draw` is the index of the next draw (the number of tokens the request already has).
  static result<sampler> create(const sampling_params& params, uint64_t first_draw = 0);

  //! The next token given logits (n_vocab,) and the tokens so far (for the penalty; ids outside
  //! the vocabulary are ignored). NaN logits never win. no_token when logits is empty.
  token_id sample(std::span<const float> logits, std::span<const token_id> history);

  const sampling_params& params() const { return params_; }
  //! The index of the next draw.
  uint64_t next_draw() const { return next_draw_; }

 private:
  sampler(const sampling_params& params, uint64_t first_draw) : params_(params), next_draw_(first_draw) {}

  sampling_params params_;
  uint64_t next_draw_;
};

}  // namespace hearth
