#pragma once
// Picking the next token from logits, with llama.cpp's default chain of filters:
//   repetition penalty -> top_k -> top_p -> min_p -> temperature -> draw
// (temperature 0 stops after the penalty and takes the argmax, lowest id on ties).
// top_p and min_p see probabilities at temperature 1, as in that chain. One sampler per request:
// it owns the request's random stream, so a seed replays the same tokens for the same logits.

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.hpp"
#include "common/rng.hpp"
#include "model/vocab.hpp"

namespace hearth {

struct sampling_params {
  float temperature = 1.0f;         //!< 0 = greedy; otherwise logits are divided by it
  uint32_t top_k = 0;               //!< keep the k most likely tokens; 0 = off
  float top_p = 1.0f;               //!< keep the smallest set whose probability reaches p; 1 = off
  float min_p = 0.0f;               //!< drop tokens below min_p * the top probability; 0 = off
  float repetition_penalty = 1.0f;  //!< logit > 0 ? logit / p : logit * p; 1 = off
  uint32_t repeat_last_n = 64;      //!< how many trailing history tokens the penalty looks at
  uint64_t seed = 0;                //!< seeds the sampler's own random stream
};

class sampler {
 public:
  //! Checks the parameters; errc::invalid_argument naming the first field out of range.
  static result<sampler> create(const sampling_params& params);

  //! The next token given logits (n_vocab,) and the tokens so far (for the penalty; ids outside
  //! the vocabulary are ignored). NaN logits never win. no_token when logits is empty.
  token_id sample(std::span<const float> logits, std::span<const token_id> history);

  const sampling_params& params() const { return params_; }

 private:
  struct candidate {
    token_id id;
    float logit;
  };

  explicit sampler(const sampling_params& params);
  void apply_penalty(std::span<const token_id> history);
  void keep_top_k();
  void keep_top_p();
  void keep_min_p();
  token_id draw();

  sampling_params params_;
  rng rng_;                          // the request's random stream, from params.seed
  std::vector<candidate> cands_;     // (n_vocab,) scratch; sorted by logit, descending, after top_k
  std::vector<token_id> recent_;     // (<= repeat_last_n,) scratch for the penalty
};

}  // namespace hearth
