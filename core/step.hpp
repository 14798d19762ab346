#pragma once
// One iteration as the scheduler hands it to a worker, and what comes back. Self-contained
// values (tokens and block tables copied), because the scheduler goes on changing its sequences
// while a worker runs the step on another thread.

#include <cstdint>
#include <vector>

#include "core/request.hpp"
#include "kernels/sampler.hpp"

namespace hearth {

//! Which worker a step is for: colocated workers run mixed steps; disaggregated, a prefill
//! worker runs prompt chunks and a decode worker runs decode tokens.
enum class step_kind : uint8_t { mixed, prefill, decode };

struct step_seq {
  request_id id = 0;
  std::vector<token_id> tokens;  //!< new tokens: a prefill chunk or one decode token
  uint32_t start_pos = 0;
  std::vector<uint32_t> blocks;  //!< block table covering [0, start_pos + tokens.size())
  bool sample = false;           //!< the step ends the prompt or is a decode: draw a token
  sampling_params sampling;
  uint64_t draw = 0;             //!< index of the draw (completion tokens so far)
  std::vector<token_id> recent;  //!< trailing tokens for the repetition penalty (when it is on)
  //! Blocks to copy in first (KV handoff by copy): from the prefill worker's pool in this
  //! process, or from the step's kv_blocks when a side runs on another node.
  std::vector<uint32_t> copy_in;

  //! One token after the first draw: a decode; anything else computes prompt (or recompute).
  bool decode() const { return tokens.size() == 1 && sample && draw > 0; }
};

//! KV blocks' bytes as they travel between nodes: whole blocks back to back, each in the
//! kv_store layout's order (kernels/kv_store.hpp). uint8_t, not std::byte: CAF serializes a
//! vector of unsigned char as one raw copy.
using kv_bytes = std::vector<uint8_t>;

struct step {
  uint64_t number = 0;
  step_kind kind = step_kind::mixed;
  std::vector<step_seq> seqs;
  //! A side on another node: the bytes of every seq's copy_in blocks, in the order the seqs list
  //! them (the scheduler read them from the prefill side's pool); empty otherwise.
  kv_bytes kv_blocks = {};

  uint32_t n_tokens() const {
    uint32_t n = 0;
    for (const auto& s : seqs) n += static_cast<uint32_t>(s.tokens.size());
    return n;
  }
  uint32_t n_tokens_decode() const {
    uint32_t n = 0;
    for (const auto& s : seqs) n += s.decode() ? 1 : 0;
    return n;
  }
  //! Thousands of (query, key) pairs the step's causal attention scores: a token at position p
  //! attends to p + 1 keys, so a chunk deep in a long prompt costs more than one at its start.
  double attention_kpairs() const {
    double pairs = 0;
    for (const auto& s : seqs) {
      const double n = static_cast<double>(s.tokens.size());
      pairs += n * s.start_pos + n * (n + 1) / 2;
    }
    return pairs / 1000;
  }
};

struct step_result {
  uint64_t number = 0;
  std::vector<token_id> sampled = {};  //!< per step_seq: the drawn token, or no_token
  double compute_ms = 0;               //!< time inside the backend and the sampler
  std::string error = {};              //!< non-empty: the step failed, nothing was computed
};

}  // namespace hearth
