#pragma once
// What the backend-against-reference and family tests share: a generated model held in memory,
// its reference twin, random weights and tokens, and the logits' relative error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/compute_type.hpp"
#include "kernels/reference_model.hpp"
#include "model/gguf.hpp"
#include "model/model_maker.hpp"

namespace hearth::test {

//! How a test loads the backend it checks (the CPU's, CUDA's): compute and KV types, positions
//! per block, pool capacity in positions. A load that fails fails the test.
struct backend_options {
  compute_type compute = compute_type::f32;
  kv_dtype kv = kv_dtype::f32;
  uint32_t block_size = 16;
  uint64_t kv_tokens = 4096;
};
using backend_loader = std::function<std::unique_ptr<backend>(const gguf::file&, const backend_options&)>;

//! The reference tests' model shape: a llama of 2 layers, 4 heads of 8 over 2 kv heads.
inline hparams tiny_hparams() {
  hparams hp;
  hp.n_vocab = 50;
  hp.n_embd = 32;
  hp.n_layer = 2;
  hp.n_head = 4;
  hp.n_head_kv = 2;
  hp.head_dim = 8;
  hp.n_rot = 8;
  hp.n_ff = 48;
  return hp;
}

//! A generated model file in memory, parsed.
struct test_model {
  std::vector<std::byte> bytes;
  gguf::file file;
};

inline std::unique_ptr<test_model> make_test_model(const make_options& opt, const vocab_spec& vocab) {
  auto bytes = model_writer(opt, vocab).to_bytes();
  auto f = gguf::file::parse(bytes);
  if (!f) FAIL(f.error().message());
  return std::unique_ptr<test_model>(new test_model{std::move(bytes), std::move(*f)});
}

//! The plain reference forward of a file's weights.
inline reference_model reference_for(const gguf::file& f, uint32_t n_ctx = 512) {
  auto hp = read_hparams(f);
  REQUIRE(hp.ok());
  auto w = load_reference_weights(f, *hp);
  if (!w) FAIL(w.error().message);
  auto r = reference_model::create(*hp, std::move(*w), n_ctx);
  if (!r) FAIL(r.error().message);
  return std::move(*r);
}

//! max |a - b| / max |b|: the error relative to the logits' scale.
inline double rel_error(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double{a[i]} - b[i]));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return diff / scale;
}

//! A writer's file in memory, parsed.
struct parsed {
  std::vector<std::byte> bytes;
  gguf::file file;
};

inline parsed parse(const gguf::writer& w) {
  auto bytes = w.to_bytes();
  auto f = gguf::file::parse(bytes);
  if (!f) FAIL(f.error().message());
  return {std::move(bytes), std::move(*f)};
}

//! The bytes of f32 values, for a tensor's data.
inline std::vector<std::byte> floats_bytes(const std::vector<float>& f) {
  std::vector<std::byte> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

//! read_hparams' error on a writer's file (which must fail).
inline std::string error_of(const gguf::writer& w) {
  auto m = parse(w);
  auto hp = read_hparams(m.file);
  REQUIRE_FALSE(hp.ok());
  return hp.error().message;
}

//! n tokens uniform over the vocabulary.
inline std::vector<token_id> random_tokens(size_t n, uint32_t n_vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<token_id> pick(0, static_cast<token_id>(n_vocab) - 1);
  std::vector<token_id> t(n);
  for (auto& x : t) x = pick(rng);
  return t;
}

//! Weights for hp: norms normal around 1, matrices around 0 with deviation 1/sqrt(fan-in).
inline reference_weights random_weights(const hparams& hp, std::mt19937_64& rng) {
  reference_weights w;
  w.layers.resize(hp.n_layer);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for_each_weight(
      hp, w, [&](const std::string& name, const std::vector<uint64_t>& dims, std::vector<float>& data) {
        const bool is_norm = name.find("norm") != std::string::npos;
        const float scale = dims.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(dims[0])) : 0.3f;
        data.resize(dims.size() == 2 ? dims[0] * dims[1] : dims[0]);
        for (auto& x : data) x = (is_norm ? 1.0f : 0.0f) + scale * normal(rng);
      });
  return w;
}

//! The reference forward's logits over tokens from position 0 (context 32).
inline std::vector<std::vector<float>> run(const hparams& hp, reference_weights w,
                                           std::span<const token_id> tokens) {
  auto m = reference_model::create(hp, std::move(w), 32);
  if (!m) FAIL(m.error().message);
  return m->forward_all(tokens, 0);
}

//! The worst rel_error over rows.
inline double max_rel_error(const std::vector<std::vector<float>>& a,
                            const std::vector<std::vector<float>>& b) {
  REQUIRE(a.size() == b.size());
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, rel_error(a[i], b[i]));
  return e;
}

//! The family tests' shape: width 64, 2 layers, 4 heads of 16 over 2 kv heads, FFN 96, 600 tokens.
inline constexpr model_preset family_preset{"gqa", 64, 2, 4, 2, 96, 600};

//! A generated file of family `arch` in family_preset's shape, context 256, seed 5.
inline make_options family_options(model_arch arch, tensor_type dtype = tensor_type::f32) {
  return make_options{family_preset, dtype, 5, tokenizer_kind::bpe, 256, arch};
}

//! The index of the largest logit.
inline size_t argmax(std::span<const float> logits) {
  return static_cast<size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

//! The backend `load` gives for file `f` (compute ct, blocks of block_size positions) against its
//! reference twin: `prompt` prefilled in one iteration with every row's logits, then n_decode
//! decode steps, each feeding the reference's greedy token. Logits within tol of the reference's;
//! with f32 compute the same greedy token at every step too.
inline void check_backend_twin(const backend_loader& load, const gguf::file& f, compute_type ct, double tol,
                               std::span<const token_id> prompt, std::span<const uint32_t> blocks,
                               uint32_t block_size, uint32_t n_decode) {
  auto be = load(f, {.compute = ct, .kv = kv_dtype_for(ct), .block_size = block_size, .kv_tokens = 1024});
  reference_model ref = reference_for(f, 256);
  batch_logits out;
  const batch_seq seq{prompt, 0, blocks, true};
  REQUIRE(be->forward({&seq, 1}, out).ok());
  const auto rows = ref.forward_all(prompt, 0);
  for (uint32_t i = 0; i < prompt.size(); ++i) {
    CHECK(rel_error(out.row(i), rows[i]) <= tol);
    if (ct == compute_type::f32) CHECK(argmax(out.row(i)) == argmax(rows[i]));
  }
  auto t = static_cast<token_id>(argmax(rows.back()));
  for (auto pos = static_cast<uint32_t>(prompt.size()); pos < prompt.size() + n_decode; ++pos) {
    const batch_seq one{{&t, 1}, pos, blocks};
    REQUIRE(be->forward({&one, 1}, out).ok());
    const auto want = ref.forward(t, pos);
    CHECK(rel_error(out.last(0), want) <= tol);
    if (ct == compute_type::f32) CHECK(argmax(out.last(0)) == argmax(want));
    t = static_cast<token_id>(argmax(want));
  }
}

}  // namespace hearth::test
