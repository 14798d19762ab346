#include "kernels/null_backend.hpp"

namespace hearth {

result<std::unique_ptr<null_backend>> null_backend::create(const hparams& hp, uint32_t n_blocks,
                                                           uint32_t block_size, token_id emit) {
  if (emit < 0 || static_cast<uint32_t>(emit) >= hp.n_vocab) {
    return error{errc::invalid_argument, "null backend: token to emit is outside the vocabulary"};
  }
  auto kv = kv_pool::create(
      {.n_layer = 1, .n_head_kv = 1, .head_dim = 1, .block_size = block_size, .dtype = kv_dtype::bf16},
      n_blocks);
  if (!kv) return kv.error();
  return std::unique_ptr<null_backend>(new null_backend(hp, std::make_shared<kv_pool>(std::move(*kv)), emit));
}

result<std::unique_ptr<backend>> null_backend::share() {
  return std::unique_ptr<backend>(new null_backend(hp_, kv_, emit_));
}

status<> null_backend::forward(std::span<const batch_seq> batch, batch_logits& out) {
  if (auto st = check_batch(batch, hp_, kv_->layout(), kv_->n_blocks()); !st) return st;
  out.n_vocab = hp_.n_vocab;
  out.first_row.clear();
  uint32_t rows = 0;
  for (const auto& s : batch) {
    out.first_row.push_back(rows);
    rows += s.all_logits ? static_cast<uint32_t>(s.tokens.size()) : 1;
  }
  out.values.assign(size_t{rows} * hp_.n_vocab, 0.0f);
  for (uint32_t r = 0; r < rows; ++r) out.values[size_t{r} * hp_.n_vocab + static_cast<size_t>(emit_)] = 1.0f;
  return {};
}

}  // namespace hearth
