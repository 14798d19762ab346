// Gemma 2 and Gemma 3 as llama.cpp runs them: their hyper-parameters and errors, the generated
// files' tensors, vocabulary and template, reference-forward properties that hold by
// construction (a sliding layer forgets what left its window, a wide cap is no cap, a capped
// head stays under its cap), and the CPU backend against the reference forward.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "cpu_backend_loader.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/reference_model.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/model_maker.hpp"
#include "model/tokenizer.hpp"
#include "model/vocab.hpp"
#include "model_test_support.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

using namespace hearth::test;

// gemma3 with 6 layers, so that one of them (layer 5) is global.
make_options gemma(model_arch arch, tensor_type dtype = tensor_type::f32) {
  make_options opt = family_options(arch, dtype);
  if (arch == model_arch::gemma3) opt.preset.n_layer = 6;
  return opt;
}

// read_hparams' error on a generated file of `arch` with `key` set to v.
std::string error_with(model_arch arch, const std::string& key, gguf::value v) {
  auto w = model_writer(gemma(arch));
  w.set(key, std::move(v));
  return error_of(w);
}

// A reference model's shape with Gemma's pieces, each layer sliding over `window` positions.
hparams tiny_gemma(uint32_t window) {
  hparams hp = test::tiny_hparams();
  hp.arch = model_arch::gemma2;
  hp.pairing = rope_pairing::halves;
  hp.act = ffn_activation::gelu;
  hp.embd_scale = std::sqrt(32.0f);
  hp.has_post_norms = true;
  hp.n_swa = window;
  hp.swa_pattern = 1000;  // layers 0 .. 998 slide
  return hp;
}

}  // namespace

TEST_CASE("gemma2 and gemma3 files read back with their family's keys, tensors, tokens and template",
          "[hparams][families]") {
  SECTION("gemma2") {
    auto m = parse(model_writer(gemma(model_arch::gemma2)));
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->arch == model_arch::gemma2);
    CHECK(hp->act == ffn_activation::gelu);
    CHECK(hp->pairing == rope_pairing::halves);
    CHECK(hp->embd_scale == std::sqrt(64.0f));
    CHECK(hp->kq_scale() == 0.25f);  // 1 / sqrt(head_dim 16)
    CHECK(hp->attn_softcap == 50.0f);
    CHECK(hp->final_softcap == 30.0f);
    CHECK(hp->has_post_norms);
    CHECK_FALSE(hp->has_qk_norm);
    CHECK(hp->tied_output);
    CHECK(hp->n_swa == generated_sliding_window);
    CHECK(hp->window(0) == generated_sliding_window);  // even layers slide
    CHECK(hp->window(1) == 0);
    CHECK(hp->rope_of(0).base == 10000.0f);
    CHECK(m.file.find_tensor("blk.1.post_attention_norm.weight")->dims == std::vector<uint64_t>{64});
    CHECK(m.file.find_tensor("blk.1.post_ffw_norm.weight")->dims == std::vector<uint64_t>{64});
    CHECK(m.file.find_tensor("output.weight") == nullptr);
  }
  SECTION("gemma3") {
    auto m = parse(model_writer(gemma(model_arch::gemma3)));
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->has_qk_norm);
    CHECK(hp->attn_softcap == 0.0f);
    CHECK(hp->final_softcap == 0.0f);
    for (uint32_t l = 0; l < 5; ++l) {
      CHECK(hp->window(l) == generated_sliding_window);
      CHECK(hp->rope_of(l).base == 10000.0f);
    }
    CHECK(hp->window(5) == 0);  // 5 local : 1 global
    CHECK(hp->rope_of(5).base == 1e6f);
    CHECK(m.file.find_tensor("blk.5.attn_q_norm.weight")->dims == std::vector<uint64_t>{16});
  }
  SECTION("the Gemma vocabulary: no space prefix, <end_of_turn> ends a turn, the Gemma template") {
    auto m = parse(model_writer(gemma(model_arch::gemma3)));
    auto v = read_vocab(m.file);
    REQUIRE(v.ok());
    CHECK(v->kind == tokenizer_kind::spm);
    CHECK_FALSE(v->add_space_prefix);
    CHECK(v->tokens[static_cast<size_t>(v->eot)] == "<end_of_turn>");
    CHECK(detect_chat_format(v->chat_template) == chat_format::gemma);
    auto tok = tokenizer::from_gguf(m.file);
    REQUIRE(tok.ok());
    CHECK(tok->is_end_of_generation(v->eot));
    const auto turn =
        tok->encode("<start_of_turn>user\nhi<end_of_turn>\n", {.add_bos = false, .parse_special = true});
    CHECK(turn.front() == v->eot - 1);
    CHECK(std::count(turn.begin(), turn.end(), v->eot) == 1);
  }
}

TEST_CASE("gemma hyper-parameters: errors name the key or tensor, the 27B scale by layer count",
          "[hparams][families]") {
  auto w = model_writer(gemma(model_arch::gemma2));
  w.add_tensor("output.weight", tensor_type::f32, {64, 600}, std::vector<std::byte>(64 * 600 * 4));
  CHECK_THAT(error_of(w), Catch::Contains("output.weight is not one of its tensors"));

  CHECK_THAT(error_with(model_arch::gemma2, "gemma2.attn_logit_softcapping", -1.0f),
             Catch::Contains("gemma2.attn_logit_softcapping = -1"));
  CHECK_THAT(error_with(model_arch::gemma2, "gemma2.final_logit_softcapping", std::string("thirty")),
             Catch::Contains("gemma2.final_logit_softcapping is not a float"));
  CHECK_THAT(error_with(model_arch::gemma3, "gemma3.attention.sliding_window", uint32_t{0}),
             Catch::Contains("gemma3.attention.sliding_window = 0 is outside"));
  CHECK_THAT(error_with(model_arch::gemma3, "gemma3.attention.sliding_window", std::string("wide")),
             Catch::Contains("gemma3.attention.sliding_window is not"));
  CHECK_THAT(error_with(model_arch::gemma3, "gemma3.attention.value_length", uint32_t{8}),
             Catch::Contains("gemma3.attention.value_length = 8"));

  // llama.cpp scales q by 1/sqrt(n_embd / n_head) for the 27B models (46 layers in gemma2, 62 in
  // gemma3), by 1/sqrt(head_dim) otherwise: heads of 32 over a width of 64 / 4 tell them apart.
  for (const auto& [arch, layers_27b] :
       {std::pair{model_arch::gemma2, 46u}, std::pair{model_arch::gemma3, 62u}}) {
    const std::string a = to_string(arch);
    for (const uint32_t layers : {layers_27b, layers_27b - 1}) {
      w = model_writer(gemma(arch));
      w.set(a + ".block_count", layers);
      w.set(a + ".attention.key_length", uint32_t{32});
      w.set(a + ".attention.value_length", uint32_t{32});
      auto m = parse(w);
      auto hp = read_hparams(m.file);
      REQUIRE(hp.ok());
      CHECK(hp->kq_scale() == (layers == layers_27b ? 0.25f : 1.0f / std::sqrt(32.0f)));
    }
  }
}

TEST_CASE("reference forward: gemma's window, caps and activation", "[reference_model][families]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto tokens = random_tokens(12, 50, rng);

  SECTION("a sliding layer forgets a token once it has left the window") {
    hparams hp = tiny_gemma(3);
    hp.n_layer = 1;  // so nothing else carries the token on
    const reference_weights w = random_weights(hp, rng);
    auto changed = tokens;
    changed[0] = (changed[0] + 1) % 50;
    const auto a = run(hp, w, tokens), b = run(hp, w, changed);
    for (size_t pos = 3; pos < tokens.size(); ++pos) CHECK(a[pos] == b[pos]);
    CHECK(rel_error(a[2], b[2]) > 1e-3);  // position 2 still sees position 0
  }
  SECTION("a window as long as the context is no window") {
    hparams hp = tiny_gemma(32);
    const reference_weights w = random_weights(hp, rng);
    hparams full = hp;
    full.n_swa = 0;
    CHECK(run(hp, w, tokens) == run(full, w, tokens));
  }
  SECTION("a cap far above the scores changes nothing, a tight one bounds the logits") {
    hparams hp = tiny_gemma(5);
    const reference_weights w = random_weights(hp, rng);
    hparams wide = hp;
    wide.attn_softcap = wide.final_softcap = 1e5f;
    CHECK(max_rel_error(run(wide, w, tokens), run(hp, w, tokens)) < 1e-6);
    hparams tight = hp;
    tight.attn_softcap = 0.5f;
    tight.final_softcap = 0.25f;
    const auto capped = run(tight, w, tokens);
    for (const auto& row : capped) {
      for (float x : row) REQUIRE(std::abs(x) <= 0.25f);
    }
    CHECK(max_rel_error(capped, run(hp, w, tokens)) > 1e-2);
  }
  SECTION("GeGLU and SwiGLU differ (the control: the activation is used)") {
    hparams hp = tiny_gemma(5);
    const reference_weights w = random_weights(hp, rng);
    hparams silu = hp;
    silu.act = ffn_activation::silu;
    CHECK(max_rel_error(run(silu, w, tokens), run(hp, w, tokens)) > 1e-3);
  }
}

TEST_CASE("backend logits match the reference forward: gemma2 and gemma3", "[cpu_backend][families]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const model_arch arch : {model_arch::gemma2, model_arch::gemma3}) {
    // The other families' bounds (bf16 2e-2, q8_0 3e-2: one linear's), times what Gemma adds:
    // post-norms bring every block's output, and its rounding, to the residual's scale, and
    // gemma3's file has 6 layers (so that one is global) where the others have 2. Worst seen
    // over 140 seeds: gemma2 0.013 and 0.032, gemma3 0.033 and 0.060.
    const double depth = arch == model_arch::gemma3 ? 2.5 : 1.5;
    for (auto [dtype, ct, tol] : {std::tuple{tensor_type::f32, compute_type::f32, 1e-4},
                                  std::tuple{tensor_type::bf16, compute_type::bf16, 2e-2 * depth},
                                  std::tuple{tensor_type::q8_0, compute_type::bf16, 3e-2 * depth}}) {
      INFO(to_string(arch) << " " << traits_of(dtype).name);
      auto m = parse(model_writer(gemma(arch, dtype)));
      // Blocks of 4 positions, handed out out of order: the window of 32 crosses many of them,
      // and the decode rows' keys are split into ranges. The prompt is longer than the window.
      std::vector<uint32_t> blocks(64);
      for (uint32_t i = 0; i < blocks.size(); ++i) blocks[i] = (i * 37) % 64;
      check_backend_twin(test::cpu_backend_loader(), m.file, ct, tol, random_tokens(40, 600, rng), blocks, 4,
                         8);
    }
  }
}
