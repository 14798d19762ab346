#pragma once
// A small model in memory with its tokenizer and CPU backend, and the oracle the engine tests
// compare against: one request alone, prefilled in one iteration and decoded token by token,
// as `hearth generate` does.
#include <catch2/catch.hpp>

#include <memory>
#include <numeric>
#include <random>

#include "core/request.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/sampler.hpp"
#include "micro_models.hpp"
#include "model/gguf.hpp"
#include "model/model_maker.hpp"
#include "model/tokenizer.hpp"

namespace hearth::test {

struct engine_model {
  std::vector<std::byte> bytes;
  gguf::file file;
  std::shared_ptr<const tokenizer> tok;

  //! The model from `preset` (a preset with a 600-token vocabulary by default: fast to build),
  //! with a context of n_ctx.
  static std::unique_ptr<engine_model> make(const model_preset& preset = micro_preset, uint32_t n_ctx = 512) {
    return make(make_options{preset, tensor_type::f32, 7, tokenizer_kind::bpe, n_ctx});
  }

  static std::unique_ptr<engine_model> make(const make_options& opt) {
    REQUIRE(validate(opt).ok());
    auto bytes = model_writer(opt).to_bytes();
    auto f = gguf::file::parse(bytes);
    REQUIRE(f.ok());
    auto tok = tokenizer::from_gguf(*f);
    REQUIRE(tok.ok());
    return std::unique_ptr<engine_model>(new engine_model{
        std::move(bytes), std::move(*f), std::make_shared<const tokenizer>(std::move(*tok))});
  }

  std::unique_ptr<cpu_backend> backend(uint64_t kv_tokens, uint32_t block_size = 16) const {
    auto b = cpu_backend::load(file, {.compute = compute_type::f32,
                                      .kv = kv_dtype::f32,
                                      .block_size = block_size,
                                      .kv_tokens = kv_tokens});
    if (!b) FAIL(b.error().message);
    return std::move(*b);
  }
};

//! The completion of r alone on `be` (its pool all to itself), ending at end of generation,
//! max_tokens or the context; the end-of-generation token is not included.
inline std::vector<token_id> generate_alone(backend& be, const tokenizer& tok, const request& r) {
  std::vector<token_id> tokens = r.prompt;
  std::vector<uint32_t> blocks(be.kv().n_blocks());
  std::iota(blocks.begin(), blocks.end(), 0u);
  auto smp = sampler::create(r.sampling);
  REQUIRE(smp.ok());
  batch_logits logits;
  const batch_seq prefill{tokens, 0, blocks};
  REQUIRE(be.forward({&prefill, 1}, logits).ok());
  std::vector<token_id> out;
  while (out.size() < r.max_tokens && tokens.size() < be.params().n_ctx_train) {
    const token_id next = smp->sample(logits.last(0), tokens);
    if (tok.is_end_of_generation(next)) break;
    tokens.push_back(next);
    out.push_back(next);
    const batch_seq step{{&tokens.back(), 1}, static_cast<uint32_t>(tokens.size() - 1), blocks};
    REQUIRE(be.forward({&step, 1}, logits).ok());
  }
  return out;
}

inline std::vector<token_id> random_prompt(size_t n, uint32_t n_vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<token_id> pick(3, static_cast<token_id>(n_vocab - 1));
  std::vector<token_id> t(n);
  for (auto& x : t) x = pick(rng);
  return t;
}

}  // namespace hearth::test
