#include "kernels/backend.hpp"

#include <cassert>
#include <string>
#include <unordered_map>

namespace hearth {
namespace {

error invalid(size_t seq, const std::string& what) {
  return error{errc::invalid_argument, "batch: sequence " + std::to_string(seq) + ": " + what};
}

status<> check_seq(size_t s, const batch_seq& q, const hparams& hp, const kv_layout& layout,
                   uint32_t n_blocks) {
  if (q.tokens.empty()) return invalid(s, "no tokens");
  for (token_id t : q.tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= hp.n_vocab)
      return invalid(s, "token " + std::to_string(t) + " outside the vocabulary");
  }
  const uint64_t end = uint64_t{q.start_pos} + q.tokens.size();
  if (end > hp.n_ctx_train) {
    return invalid(s, "positions up to " + std::to_string(end) + " exceed the context of " +
                          std::to_string(hp.n_ctx_train));
  }
  if (uint64_t{q.blocks.size()} * layout.block_size < end) {
    return invalid(
        s, std::to_string(q.blocks.size()) + " blocks cannot hold " + std::to_string(end) + " positions");
  }
  for (uint32_t b : q.blocks) {
    if (b >= n_blocks) return invalid(s, "block " + std::to_string(b) + " outside the pool");
  }
  return {};
}

}  // namespace

std::span<const float> batch_logits::last(uint32_t s) const {
  assert(s < first_row.size() && n_vocab > 0 && "batch_logits::last: no such sequence");
  const uint32_t end =
      s + 1 < first_row.size() ? first_row[s + 1] : static_cast<uint32_t>(values.size() / n_vocab);
  return row(end - 1);
}

status<> check_batch(std::span<const batch_seq> batch, const hparams& hp, const kv_layout& layout,
                     uint32_t n_blocks) {
  // Block -> the last sequence that uses it and whether that sequence writes into it. Sequences
  // may share read-only prefix blocks; a block that receives new tokens belongs to one sequence,
  // and no table names a block twice.
  struct use {
    size_t seq;
    bool written;
  };
  std::unordered_map<uint32_t, use> uses;
  for (size_t s = 0; s < batch.size(); ++s) {
    const batch_seq& q = batch[s];
    if (auto st = check_seq(s, q, hp, layout, n_blocks); !st) return st;
    const uint32_t first_written = q.start_pos / layout.block_size;
    const uint32_t last = static_cast<uint32_t>((q.start_pos + q.tokens.size() - 1) / layout.block_size);
    for (uint32_t i = 0; i <= last; ++i) {
      const uint32_t b = q.blocks[i];
      const bool written = i >= first_written;
      auto [it, fresh] = uses.try_emplace(b, use{s, written});
      if (fresh) continue;
      if (it->second.seq == s)
        return invalid(s, "block " + std::to_string(b) + " appears twice in its table");
      if (written || it->second.written) {
        return invalid(s, "block " + std::to_string(b) + " is shared with sequence " +
                              std::to_string(it->second.seq) + " while one of them writes it");
      }
      it->second = use{s, false};
    }
  }
  return {};
}

}  // namespace hearth
