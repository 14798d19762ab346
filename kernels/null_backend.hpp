#pragma once
// A backend that computes nothing. Every iteration is checked like a real one and answers logits
// that put all weight on one fixed token, so sequences run to their max_tokens. It measures the
// runtime around the compute (`hearth bench engine`: actors, scheduling, bookkeeping) and lets
// scheduling be tested at sizes a real model would make slow.

#include <memory>

#include "kernels/backend.hpp"
#include "kernels/kv_pool.hpp"

namespace hearth {

class null_backend final : public backend {
 public:
  //! hp: the model it stands in for (vocabulary, context); n_blocks blocks of block_size
  //! positions; every answer is `emit`. errc::invalid_argument when emit is outside the vocabulary.
  static result<std::unique_ptr<null_backend>> create(const hparams& hp, uint32_t n_blocks,
                                                      uint32_t block_size, token_id emit);

  const hparams& params() const override { return hp_; }
  kv_pool& kv() override { return *kv_; }
  status<> forward(std::span<const batch_seq> batch, batch_logits& out) override;
  result<std::unique_ptr<backend>> share() override;

 private:
  null_backend(const hparams& hp, std::shared_ptr<kv_pool> kv, token_id emit)
      : hp_(hp), kv_(std::move(kv)), emit_(emit) {}

  hparams hp_;
  std::shared_ptr<kv_pool> kv_;  // one byte-sized head per block: only its block count matters
  token_id emit_;
};

}  // namespace hearth
