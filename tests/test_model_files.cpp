// Generated models, hyper-parameters and vocabularies read back from GGUF.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/hparams.hpp"
#include "model/model_maker.hpp"
#include "model/tokenizer.hpp"
#include "model/vocab.hpp"

using namespace hearth;

namespace {

// A small model of the same shape family as the presets, fast to generate in tests.
constexpr model_preset test_preset{"test", 64, 2, 4, 2, 128, 600};

make_options test_options(tensor_type dtype = tensor_type::f32, uint64_t seed = 7) {
  return make_options{test_preset, dtype, seed, tokenizer_kind::bpe, 256};
}

// Keeps the bytes alive next to the file that views them.
struct parsed {
  std::vector<std::byte> bytes;
  gguf::file file;
};

parsed parse(const gguf::writer& w) {
  auto bytes = w.to_bytes();
  auto f = gguf::file::parse(bytes);
  if (!f) FAIL(f.error().message());
  return {std::move(bytes), std::move(*f)};
}

}  // namespace

TEST_CASE("presets have the advertised shapes", "[model_maker]") {
  const auto* tiny = find_preset("tiny");
  REQUIRE(tiny);
  CHECK((tiny->n_embd == 288 && tiny->n_layer == 6 && tiny->n_head == 6 && tiny->n_ff == 768 &&
         tiny->n_vocab == 32000));
  const auto* small = find_preset("small");
  REQUIRE(small);
  CHECK((small->n_embd == 768 && small->n_layer == 12 && small->n_head == 12 && small->n_ff == 2048));
  const auto* b1 = find_preset("1b");
  REQUIRE(b1);
  CHECK((b1->n_embd == 2048 && b1->n_layer == 22 && b1->n_head == 32 && b1->n_head_kv == 4 &&
         b1->n_ff == 5632));
  CHECK_FALSE(find_preset("7b"));
  for (const auto& p : model_presets()) {
    for (auto t :
         {tensor_type::f32, tensor_type::bf16, tensor_type::f16, tensor_type::q8_0, tensor_type::q4_0}) {
      CHECK(validate(make_options{p, t, 1, tokenizer_kind::bpe, 2048}).ok());
    }
  }
}

TEST_CASE("a generated model reads back with its hyper-parameters", "[model_maker]") {
  for (auto dtype :
       {tensor_type::f32, tensor_type::bf16, tensor_type::f16, tensor_type::q8_0, tensor_type::q4_0}) {
    INFO(traits_of(dtype).name);
    auto m = parse(model_writer(test_options(dtype)));
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->arch == model_arch::llama);
    CHECK(hp->name == "hearth-test");
    CHECK(hp->n_vocab == 600);
    CHECK(hp->n_embd == 64);
    CHECK(hp->n_layer == 2);
    CHECK(hp->n_head == 4);
    CHECK(hp->n_head_kv == 2);
    CHECK(hp->head_dim == 16);
    CHECK(hp->n_rot == 16);
    CHECK(hp->n_ff == 128);
    CHECK(hp->n_ctx_train == 256);
    CHECK(hp->pairing == rope_pairing::adjacent);
    CHECK(hp->rope_freq_factors.empty());
    CHECK_FALSE(hp->tied_output);
    CHECK_FALSE(hp->has_qkv_bias);
    // 2 + 9 per layer tensors; matrices in the requested type, norms in f32.
    CHECK(m.file.tensors().size() == 3 + 9 * 2);
    CHECK(m.file.find_tensor("blk.1.ffn_down.weight")->type == dtype);
    CHECK(m.file.find_tensor("blk.1.ffn_norm.weight")->type == tensor_type::f32);
    CHECK(m.file.find_tensor("blk.1.ffn_down.weight")->dims == std::vector<uint64_t>{128, 64});
  }
}

TEST_CASE("a preset mix needs whole 32-element rows, a pure K type whole 256-element rows", "[model_maker]") {
  const auto* tiny = find_preset("tiny");  // 288 wide: 9 blocks of 32, not whole super-blocks
  make_options opt{*tiny, tensor_type::q4_k, 1, tokenizer_kind::bpe, 2048};
  const auto pure = validate(opt);
  REQUIRE_FALSE(pure.ok());
  CHECK(pure.error().message == "model make: dimensions must be multiples of 256 for q4_K");
  for (const file_type ft : file_types()) {
    opt.mix = ft;
    INFO(to_string(ft));
    CHECK(validate(opt).ok());
  }
  make_options narrow{{"narrow", 48, 1, 2, 2, 96, 600}, tensor_type::f32, 1, tokenizer_kind::bpe, 256};
  narrow.mix = file_type::q4_k_m;
  REQUIRE_FALSE(validate(narrow).ok());
  CHECK(validate(narrow).error().message == "model make: dimensions must be multiples of 32 for q4_k_m");
  narrow.mix = file_type::bf16;
  CHECK(validate(narrow).ok());
  // The mix decides each matrix's type and the recorded file type; dtype is not used.
  make_options m = test_options();
  m.mix = file_type::q8_0;
  auto f = parse(model_writer(m));
  CHECK(f.file.get_uint("general.file_type") == 7u);
  CHECK(f.file.find_tensor("output.weight")->type == tensor_type::q8_0);
  m.mix = file_type::q4_0;
  f = parse(model_writer(m));
  CHECK(f.file.get_uint("general.file_type") == 2u);
  CHECK(f.file.find_tensor("blk.0.attn_q.weight")->type == tensor_type::q4_0);
  CHECK(f.file.find_tensor("output.weight")->type == tensor_type::q8_0);  // q6_K's fallback at 64 wide
}

TEST_CASE("generated models are deterministic in their seed", "[model_maker]") {
  const auto a = model_writer(test_options(tensor_type::q8_0, 3)).to_bytes();
  const auto b = model_writer(test_options(tensor_type::q8_0, 3)).to_bytes();
  const auto c = model_writer(test_options(tensor_type::q8_0, 4)).to_bytes();
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("generated weights keep activations finite and scaled", "[model_maker]") {
  auto m = parse(model_writer(test_options(tensor_type::bf16)));
  const auto* t = m.file.find_tensor("blk.0.attn_q.weight");
  std::vector<float> w(t->n_elements);
  dequantize(t->type, m.file.data(*t), w);
  double sum2 = 0;
  for (float x : w) sum2 += double{x} * x;
  // Standard deviation 1/sqrt(fan_in) = 1/8 for a 64-wide input.
  CHECK(std::sqrt(sum2 / static_cast<double>(w.size())) == Approx(0.125).epsilon(0.05));
  const auto* norm = m.file.find_tensor("output_norm.weight");
  std::vector<float> n(norm->n_elements);
  dequantize(norm->type, m.file.data(*norm), n);
  CHECK(n == std::vector<float>(64, 1.0f));
}

TEST_CASE("the vocabulary survives the file and tokenizes text", "[model_maker][tokenizer]") {
  for (auto kind : {tokenizer_kind::bpe, tokenizer_kind::spm}) {
    auto opt = test_options();
    opt.tokenizer = kind;
    auto m = parse(model_writer(opt));
    auto v = read_vocab(m.file);
    REQUIRE(v.ok());
    CHECK(v->kind == kind);
    CHECK(v->tokens.size() == 600);
    CHECK(v->bos != no_token);
    CHECK(v->eos != no_token);
    auto tok = tokenizer::from_gguf(m.file);
    REQUIRE(tok.ok());
    const std::string text = "Dinner at 7:30 — the kitchen is warm. Grüße, 你好 🙂\n\tdone";
    const auto ids = tok->encode(text, {.add_bos = false, .parse_special = false});
    CHECK(tok->decode(ids) == text);
    CHECK(detect_chat_format(v->chat_template) ==
          (kind == tokenizer_kind::bpe ? chat_format::llama3 : chat_format::llama2));
  }
}

TEST_CASE("hyper-parameters: errors name what is wrong", "[hparams]") {
  auto expect_error = [](gguf::writer w, errc code, const std::string& needle) {
    auto m = parse(w);
    auto hp = read_hparams(m.file);
    REQUIRE_FALSE(hp.ok());
    CHECK(hp.error().code == code);
    INFO(hp.error().message);
    CHECK(hp.error().message.find(needle) != std::string::npos);
  };
  auto w = model_writer(test_options());
  w.set("general.architecture", std::string("mamba"));
  expect_error(std::move(w), errc::unsupported, "unsupported architecture 'mamba'");

  w = model_writer(test_options());
  w.set("llama.attention.head_count_kv", uint32_t{3});
  expect_error(std::move(w), errc::malformed, "not a multiple of head_count_kv");

  w = model_writer(test_options());
  w.set("llama.embedding_length", std::string("wide"));
  expect_error(std::move(w), errc::malformed, "llama.embedding_length is not a non-negative integer");

  w = model_writer(test_options());
  w.set("llama.block_count", uint64_t{1} << 40);
  expect_error(std::move(w), errc::malformed, "llama.block_count");

  w = model_writer(test_options());
  w.set("llama.vocab_size", uint32_t{601});
  expect_error(std::move(w), errc::malformed, "token_embd.weight is not [64, 601]");

  w = model_writer(test_options());
  w.set("llama.rope.scaling.type", std::string("yarn"));
  expect_error(std::move(w), errc::unsupported, "rope scaling type 'yarn'");
}

TEST_CASE("RoPE frequency factors come from rope_freqs.weight or llama3 keys", "[hparams]") {
  SECTION("llama3 keys") {
    auto w = model_writer(test_options());
    w.set("llama.rope.freq_base", 500000.0f);
    w.set("llama.rope.scaling.type", std::string("llama3"));
    w.set("llama.rope.scaling.factor", 8.0f);
    auto m = parse(w);
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    REQUIRE(hp->rope_freq_factors.size() == 8);
    CHECK(hp->rope_freq_factors.front() == 1.0f);  // wavelength 2*pi: far above the band, kept
    CHECK(hp->rope_freq_factors.back() == 8.0f);   // wavelength ~6e5 tokens: divided by the factor
    for (size_t i = 1; i < 8; ++i) CHECK(hp->rope_freq_factors[i] >= hp->rope_freq_factors[i - 1]);
  }
  SECTION("llama3 keys, every regime") {
    // n_rot 8, base 10000: wavelengths 2pi * 10^i = 6.3, 63, 628, 6283 against an original
    // context of 64 with low/high factors 1/4: kept (< 16), blended (16..64), stretched (> 64).
    auto w = model_writer(test_options());
    w.set("llama.rope.dimension_count", uint32_t{8});
    w.set("llama.rope.scaling.type", std::string("llama3"));
    w.set("llama.rope.scaling.original_context_length", uint32_t{64});
    auto m = parse(w);
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    REQUIRE(hp->rope_freq_factors.size() == 4);
    CHECK(hp->rope_freq_factors[0] == 1.0f);
    CHECK(hp->rope_freq_factors[1] == Approx(0.1 / 0.01304226));  // the blend of 0.1 and 0.1 / 8
    CHECK(hp->rope_freq_factors[2] == 8.0f);
    CHECK(hp->rope_freq_factors[3] == 8.0f);
  }
  SECTION("tensor") {
    auto w = model_writer(test_options());
    std::vector<float> f{1, 1, 2, 2, 4, 4, 8, 8};
    std::vector<std::byte> bytes(f.size() * 4);
    std::memcpy(bytes.data(), f.data(), bytes.size());
    w.add_tensor("rope_freqs.weight", tensor_type::f32, {8}, bytes);
    auto m = parse(w);
    auto hp = read_hparams(m.file);
    REQUIRE(hp.ok());
    CHECK(hp->rope_freq_factors == f);
  }
}

TEST_CASE("qwen2 files use half-split RoPE and biases", "[hparams]") {
  auto w = model_writer(test_options());
  w.set("general.architecture", std::string("qwen2"));
  const std::pair<const char*, uint32_t> keys[] = {
      {"context_length", 256},      {"embedding_length", 64},    {"block_count", 2},
      {"feed_forward_length", 128}, {"attention.head_count", 4}, {"attention.head_count_kv", 2}};
  for (const auto& [key, n] : keys) w.set(std::string("qwen2.") + key, n);
  for (int l = 0; l < 2; ++l) {
    for (const char* t : {"q", "k", "v"}) {
      const uint64_t n = t[0] == 'q' ? 64 : 32;
      w.add_tensor("blk." + std::to_string(l) + ".attn_" + t + ".bias", tensor_type::f32, {n},
                   std::vector<std::byte>(n * 4));
    }
  }
  auto m = parse(w);
  auto hp = read_hparams(m.file);
  REQUIRE(hp.ok());
  CHECK(hp->arch == model_arch::qwen2);
  CHECK(hp->pairing == rope_pairing::halves);
  CHECK(hp->has_qkv_bias);
}

TEST_CASE("vocabulary errors name the key", "[vocab]") {
  auto w = model_writer(test_options());
  w.set("tokenizer.ggml.model", std::string("rwkv"));
  auto m = parse(w);
  auto v = read_vocab(m.file);
  REQUIRE_FALSE(v.ok());
  CHECK(v.error().code == errc::unsupported);

  w = model_writer(test_options());
  w.set("tokenizer.ggml.bos_token_id", uint32_t{600});
  auto m2 = parse(w);
  auto v2 = read_vocab(m2.file);
  REQUIRE_FALSE(v2.ok());
  CHECK(v2.error().message.find("tokenizer.ggml.bos_token_id") != std::string::npos);

  w = model_writer(test_options());
  w.set("tokenizer.ggml.scores", gguf::array_value{gguf::value_type::f32, {gguf::value{1.0f}}});
  auto m3 = parse(w);
  auto v3 = read_vocab(m3.file);
  REQUIRE_FALSE(v3.ok());
  CHECK(v3.error().message.find("scores and tokens differ") != std::string::npos);
}
