// The families beyond llama: Qwen 3 (per-head q/k RMS norms) and Phi-3 (fused QKV and gate/up,
// LongRoPE, sliding window). Their hyper-parameters and errors, the generated files' tensors,
// vocabularies and templates, reference-forward identities that hold by construction (scale-free
// attention under q/k norms, a fused matrix equal to its parts, RoPE's attn_factor equal to a
// scaled wq), and the CPU backend against the reference forward.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "cpu_backend_loader.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/reference_model.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/model_maker.hpp"
#include "model/vocab.hpp"
#include "model_test_support.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

using namespace hearth::test;

make_options family(model_arch arch, tensor_type dtype = tensor_type::f32) {
  return family_options(arch, dtype);
}

// A llama file relabelled as `arch`: right keys, the other family's tensors.
gguf::writer relabelled(model_arch arch) {
  auto w = model_writer(family(model_arch::llama));
  const std::string a = to_string(arch);
  w.set("general.architecture", a);
  const std::pair<const char*, uint32_t> keys[] = {
      {"context_length", 256},     {"embedding_length", 64},    {"block_count", 2},
      {"feed_forward_length", 96}, {"attention.head_count", 4}, {"attention.head_count_kv", 2}};
  for (const auto& [key, n] : keys) w.set(a + "." + key, n);
  return w;
}

// A reference model's shape, with weights normal around 1 (norms) or 0 (the rest).
hparams tiny(model_arch arch) {
  hparams hp = test::tiny_hparams();
  hp.arch = arch;
  hp.pairing = rope_pairing::halves;
  hp.has_qk_norm = arch == model_arch::qwen3;
  hp.fused_qkv = hp.fused_gate_up = arch == model_arch::phi3;
  return hp;
}

}  // namespace

TEST_CASE("qwen3 and phi3 files read back with their family's tensors, tokens and template",
          "[hparams][families]") {
  SECTION("qwen3") {
    auto m = parse(model_writer(family(model_arch::qwen3)));
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->arch == model_arch::qwen3);
    CHECK(hp->pairing == rope_pairing::halves);
    CHECK(hp->has_qk_norm);
    CHECK_FALSE(hp->has_qkv_bias);
    CHECK_FALSE(hp->fused_qkv);
    REQUIRE(m.file.find_tensor("blk.1.attn_q_norm.weight"));
    CHECK(m.file.find_tensor("blk.1.attn_k_norm.weight")->dims == std::vector<uint64_t>{16});
    auto v = read_vocab(m.file);
    REQUIRE(v.ok());
    CHECK(v->pre == "qwen2");
    CHECK_FALSE(v->add_bos);
    CHECK(v->tokens[static_cast<size_t>(v->eos)] == "<|im_end|>");
    CHECK(v->eot == v->eos);
    CHECK(detect_chat_format(v->chat_template) == chat_format::chatml);
  }
  SECTION("phi3") {
    auto m = parse(model_writer(family(model_arch::phi3)));
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->arch == model_arch::phi3);
    CHECK(hp->pairing == rope_pairing::halves);
    CHECK(hp->fused_qkv);
    CHECK(hp->fused_gate_up);
    CHECK(hp->n_ctx_train == 256);  // sliding_window 0: none
    CHECK(m.file.find_tensor("blk.0.attn_qkv.weight")->dims == std::vector<uint64_t>{64, 64 + 2 * 32});
    CHECK(m.file.find_tensor("blk.0.ffn_up.weight")->dims == std::vector<uint64_t>{64, 2 * 96});
    CHECK(m.file.find_tensor("blk.0.ffn_gate.weight") == nullptr);
    CHECK(m.file.find_tensor("blk.0.attn_q.weight") == nullptr);
    auto v = read_vocab(m.file);
    REQUIRE(v.ok());
    CHECK(v->kind == tokenizer_kind::spm);
    CHECK(v->rstrip_specials);  // named hearth-phi3-*, as llama.cpp checks
    CHECK(v->tokens[static_cast<size_t>(v->eot)] == "<|end|>");
    CHECK(v->tokens[static_cast<size_t>(v->eos)] == "<|endoftext|>");
    CHECK(v->tokens.size() == 600);
    CHECK(detect_chat_format(v->chat_template) == chat_format::phi3);
  }
  SECTION("phi3 refuses a tied head when generating, as llama.cpp's loader would") {
    auto opt = family(model_arch::phi3);
    opt.tie_output = true;
    CHECK_FALSE(validate(opt).ok());
  }
}

TEST_CASE("family hyper-parameters: errors name the key or tensor", "[hparams][families]") {
  auto w = model_writer(family(model_arch::qwen3));
  w.set("qwen3.attention.value_length", uint32_t{8});
  CHECK_THAT(error_of(w), Catch::Contains("qwen3.attention.value_length = 8"));

  w = model_writer(family(model_arch::qwen3));
  w.set("qwen3.rope.dimension_count", uint32_t{8});
  CHECK_THAT(error_of(w), Catch::Contains("qwen3.rope.dimension_count = 8 must equal"));

  w = model_writer(family(model_arch::phi3));
  w.set("phi3.attention.key_length", uint32_t{8});
  w.set("phi3.rope.dimension_count", uint32_t{8});
  CHECK_THAT(error_of(w), Catch::Contains("phi3.attention.key_length = 8"));

  w = model_writer(family(model_arch::phi3));
  w.set("phi3.attention.sliding_window", std::string("wide"));
  CHECK_THAT(error_of(w), Catch::Contains("phi3.attention.sliding_window is not"));

  w = model_writer(family(model_arch::phi3));
  w.add_tensor("rope_factors_long.weight", tensor_type::f32, {8}, floats_bytes(std::vector<float>(8, 2.0f)));
  CHECK_THAT(error_of(w), Catch::Contains("come in pairs"));

  w = model_writer(family(model_arch::phi3));
  w.add_tensor("rope_factors_long.weight", tensor_type::f32, {4}, floats_bytes(std::vector<float>(4, 2.0f)));
  w.add_tensor("rope_factors_short.weight", tensor_type::f32, {4}, floats_bytes(std::vector<float>(4, 1.0f)));
  CHECK_THAT(error_of(w), Catch::Contains("rope_factors_long.weight must be f32 [8]"));

  // The other family's tensors: the loaders name the first one missing.
  for (const auto& [arch, tensor] : {std::pair{model_arch::qwen3, "blk.0.attn_q_norm.weight"},
                                     std::pair{model_arch::phi3, "blk.0.attn_qkv.weight"}}) {
    auto m = parse(relabelled(arch));
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    auto rw = load_reference_weights(m.file, *hp);
    REQUIRE_FALSE(rw.ok());
    CHECK_THAT(rw.error().message, Catch::Contains(std::string("tensor ") + tensor + " is missing"));
    auto be = cpu_backend::load(m.file, {.compute = compute_type::f32, .kv = kv_dtype::f32, .kv_tokens = 64});
    REQUIRE_FALSE(be.ok());
    CHECK_THAT(be.error().message, Catch::Contains(tensor));
  }
}

TEST_CASE("phi3: a sliding window and LongRoPE bound the context Hearth serves", "[hparams][families]") {
  SECTION("window shorter than the context: served up to the window") {
    auto w = model_writer(family(model_arch::phi3));
    w.set("phi3.attention.sliding_window", uint32_t{100});
    auto m = parse(w);
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->n_ctx_train == 100);
  }
  SECTION("LongRoPE: the short factors and the attention factor, context up to the original") {
    auto w = model_writer(family(model_arch::phi3));
    const std::vector<float> short_f{1, 1.5f, 2, 3, 4, 5, 6, 7}, long_f(8, 9.0f);
    w.add_tensor("rope_factors_long.weight", tensor_type::f32, {8}, floats_bytes(long_f));
    w.add_tensor("rope_factors_short.weight", tensor_type::f32, {8}, floats_bytes(short_f));
    w.set("phi3.rope.scaling.attn_factor", 1.19f);
    w.set("phi3.rope.scaling.original_context_length", uint32_t{128});
    auto m = parse(w);
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->rope_freq_factors == short_f);
    CHECK(hp->rope_attn_factor == 1.19f);
    CHECK(hp->n_ctx_train == 128);
  }
}

TEST_CASE("reference forward: the families' identities", "[reference_model][families]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto tokens = random_tokens(9, 50, rng);

  SECTION("qwen3: per-head q/k norms make attention blind to the scale of wq and wk") {
    // eps under the norm is what makes the identity approximate: keep it far below mean(q^2).
    hparams hp = tiny(model_arch::qwen3);
    hp.rms_eps = 1e-7f;
    reference_weights w = random_weights(hp, rng);
    reference_weights scaled = w;
    for (auto& l : scaled.layers) {
      for (float& x : l.wq) x *= 7.0f;
      for (float& x : l.wk) x *= 0.3f;  // mean(k^2) ~ 0.1, eps 1e-6 of it
    }
    CHECK(max_rel_error(run(hp, scaled, tokens), run(hp, w, tokens)) < 1e-4);
    // The control: without the norms the same scaling changes the logits.
    hparams plain = hp;
    plain.has_qk_norm = false;
    for (auto* ws : {&scaled, &w}) {
      for (auto& l : ws->layers) l.q_norm.clear(), l.k_norm.clear();
    }
    CHECK(max_rel_error(run(plain, scaled, tokens), run(plain, w, tokens)) > 1e-2);
  }
  SECTION("phi3: fused qkv and gate/up compute what their parts do") {
    const hparams split = tiny(model_arch::qwen2);  // halves pairing, no biases, split tensors
    const reference_weights w = random_weights(split, rng);
    const hparams fused = tiny(model_arch::phi3);
    reference_weights f = w;
    for (auto& l : f.layers) {
      l.wqkv = l.wq;
      l.wqkv.insert(l.wqkv.end(), l.wk.begin(), l.wk.end());
      l.wqkv.insert(l.wqkv.end(), l.wv.begin(), l.wv.end());
      l.w_gate_up = l.w_gate;
      l.w_gate_up.insert(l.w_gate_up.end(), l.w_up.begin(), l.w_up.end());
      l.wq.clear(), l.wk.clear(), l.wv.clear(), l.w_gate.clear(), l.w_up.clear();
    }
    CHECK(run(fused, f, tokens) == run(split, w, tokens));
  }
  SECTION("RoPE's attn_factor a scales q.k by a^2, as wq times a^2 does") {
    hparams hp = tiny(model_arch::phi3);
    const reference_weights w = random_weights(hp, rng);
    hparams scaled_rope = hp;
    scaled_rope.rope_attn_factor = 1.3f;
    reference_weights scaled_q = w;
    // wqkv's first q_dim rows are wq (n_head * head_dim rows of n_embd).
    for (auto& l : scaled_q.layers) {
      for (size_t i = 0; i < size_t{hp.n_head} * hp.head_dim * hp.n_embd; ++i) l.wqkv[i] *= 1.3f * 1.3f;
    }
    CHECK(max_rel_error(run(scaled_rope, w, tokens), run(hp, scaled_q, tokens)) < 1e-4);
    CHECK(max_rel_error(run(scaled_rope, w, tokens), run(hp, w, tokens)) > 1e-3);
  }
}

TEST_CASE("backend logits match the reference forward: qwen3 and phi3", "[cpu_backend][families]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  struct config {
    const char* name;
    model_arch arch;
    bool long_rope;
  };
  for (const config c : {config{"qwen3", model_arch::qwen3, false}, config{"phi3", model_arch::phi3, false},
                         config{"phi3 LongRoPE", model_arch::phi3, true}}) {
    for (auto [dtype, ct, tol] : {std::tuple{tensor_type::f32, compute_type::f32, 1e-4},
                                  std::tuple{tensor_type::bf16, compute_type::bf16, 2e-2},
                                  // q8_0 stays quantized: its dots round the activations to 8 bits per
                                  // block of 32 as well (the linear's own bound: 3e-2, test_matmul.cpp)
                                  std::tuple{tensor_type::q8_0, compute_type::bf16, 3e-2}}) {
      INFO(c.name << " " << traits_of(dtype).name);
      auto w = model_writer(family(c.arch, dtype));
      if (c.long_rope) {
        w.add_tensor("rope_factors_long.weight", tensor_type::f32, {8},
                     floats_bytes(std::vector<float>(8, 4.0f)));
        w.add_tensor("rope_factors_short.weight", tensor_type::f32, {8},
                     floats_bytes({1.0f, 1.1f, 1.3f, 1.7f, 2.0f, 2.5f, 3.0f, 4.0f}));
        w.set("phi3.rope.scaling.attn_factor", 1.2f);
      }
      auto m = parse(w);
      const std::vector<uint32_t> blocks{2, 0, 5};
      check_backend_twin(test::cpu_backend_loader(), m.file, ct, tol, random_tokens(19, 600, rng), blocks, 16,
                         5);
    }
  }
}
