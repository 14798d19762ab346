#pragma once
// A small model in memory with its tokenizer and CPU backend, and the oracles the engine tests
// compare against: one request alone, prefilled in one iteration and decoded token by token,
// as `hearth generate` does, or in the chunks an engine gave it.
#include <catch2/catch.hpp>

#include <memory>
#include <numeric>
#include <random>

#include "core/request.hpp"
#include "core/step.hpp"
#include "core/step_runner.hpp"
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

//! What r draws alone on `be` (a pool of the engine's shape: its block tables are reused), its
//! prompt computed in the chunks the engine gave it (`calls`: r's part of every step it ran, in
//! order, recomputes after a preemption included), feeding back its own draws. Against a one-shot
//! prefill a chunk boundary moves a rounding, which now and then flips a sampled token or a
//! greedy near-tie (scheduler_core's concurrency test about once in 250 runs) and says nothing
//! about concurrency: in the engine's own chunks, alone must be the same bit for bit.
inline std::vector<token_id> alone_in_its_chunks(backend& be, const tokenizer& tok, const request& r,
                                                 const std::vector<step_seq>& calls) {
  std::vector<token_id> tokens = r.prompt, out;
  step_runner runner(be);
  REQUIRE_FALSE(calls.empty());
  REQUIRE(calls.front().start_pos == 0);  // random prompts share no cached block with another
  for (const step_seq& c : calls) {
    const size_t end = c.start_pos + c.tokens.size();
    REQUIRE(end <= tokens.size());
    step_seq mine = c;  // its block table and sampling
    mine.tokens.assign(tokens.begin() + c.start_pos, tokens.begin() + static_cast<std::ptrdiff_t>(end));
    mine.draw = out.size();
    mine.copy_in.clear();  // one pool here: the blocks a decode side copies in are in place
    const step_result res = runner.run(step{.seqs = {mine}});
    REQUIRE(res.error.empty());
    if (!c.sample) continue;
    REQUIRE(end == tokens.size());
    if (tok.is_end_of_generation(res.sampled[0])) break;
    tokens.push_back(res.sampled[0]);
    out.push_back(res.sampled[0]);
  }
  return out;
}

inline std::vector<token_id> random_prompt(size_t n, uint32_t n_vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<token_id> pick(3, static_cast<token_id>(n_vocab - 1));
  std::vector<token_id> t(n);
  for (auto& x : t) x = pick(rng);
  return t;
}

//! `prefix` (a shared system prompt, say) followed by n random tokens of 3 .. n_vocab - 1.
inline std::vector<token_id> with_random_tail(std::vector<token_id> prefix, size_t n, uint32_t n_vocab,
                                              std::mt19937_64& rng) {
  const auto tail = random_prompt(n, n_vocab, rng);
  prefix.insert(prefix.end(), tail.begin(), tail.end());
  return prefix;
}

}  // namespace hearth::test
