#pragma once
// What the backend-against-reference tests share: a generated model held in memory, its
// reference twin, and the logits' relative error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <vector>

#include "kernels/reference_model.hpp"
#include "model/gguf.hpp"
#include "model/model_maker.hpp"

namespace hearth::test {

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

}  // namespace hearth::test
