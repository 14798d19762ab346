#pragma once
// The seam between scheduling and compute. One `forward` call runs one iteration: a batch that
// mixes prefill chunks and decode tokens of many sequences over the paged KV cache, and returns
// logits. The scheduler never knows which backend runs (CPU/oneDNN now; accelerator or simulated
// later). Backends are driven from one thread (the worker's); they are not thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels/kv_store.hpp"
#include "model/hparams.hpp"
#include "model/vocab.hpp"

namespace hearth {

//! One sequence's share of an iteration.
struct batch_seq {
  std::span<const token_id> tokens;  //!< new tokens: a prefill chunk (any length >= 1) or one decode token
  uint32_t start_pos = 0;            //!< position of tokens[0]; positions [0, start_pos) are already cached
  std::span<const uint32_t> blocks;  //!< block table covering positions [0, start_pos + tokens.size())
  bool all_logits = false;           //!< logits for every new token (tests), else only for the last
};

//! The logits of one iteration: rows in batch order; a sequence gets tokens.size() rows when it
//! asked for all_logits, else one.
struct batch_logits {
  uint32_t n_vocab = 0;
  std::vector<float> values;        //!< (n_rows, n_vocab)
  std::vector<uint32_t> first_row;  //!< per sequence: its first row

  std::span<const float> row(uint32_t r) const { return {values.data() + size_t{r} * n_vocab, n_vocab}; }
  //! The last row of sequence s: the logits that predict its next token.
  std::span<const float> last(uint32_t s) const;
};

//! The checks every backend makes before an iteration: tokens below n_vocab, at least one token
//! per sequence, positions within the model's context and the blocks given, block ids inside
//! the pool, and no block that receives new tokens shared with another sequence (shared prefix
//! blocks are read-only). errc::invalid_argument naming the sequence and what is wrong.
status<> check_batch(std::span<const batch_seq> batch, const hparams& hp, const kv_layout& layout,
                     uint32_t n_blocks);

class backend {
 public:
  virtual ~backend() = default;

  virtual const hparams& params() const = 0;
  //! What it computes on, for placement reports: "cpu", "cuda:0 (NVIDIA H200)".
  virtual std::string device_name() const { return "cpu"; }
  //! The KV blocks this backend reads and writes (host memory, or its device's).
  virtual kv_store& kv() = 0;
  //! Runs one iteration. Checks the batch first (tokens in the vocabulary, positions within the
  //! blocks given, block ids in the pool, no block written by two sequences) and fails with
  //! errc::invalid_argument before touching any state.
  virtual status<> forward(std::span<const batch_seq> batch, batch_logits& out) = 0;
  //! A second backend over the same weights and KV pool, for a worker on other cores (prefill /
  //! decode disaggregation on one memory node): the two may run forward at the same time on
  //! sequences whose written blocks differ. Call it on the thread that will use the result.
  virtual result<std::unique_ptr<backend>> share() = 0;
};

//! Builds a backend where it will run: a worker calls it on its own thread (and again when it
//! is restarted).
using backend_factory = std::function<result<std::unique_ptr<backend>>()>;

}  // namespace hearth
