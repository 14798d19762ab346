// Generated models in llama-quantize's mixes (q2_k ... q6_k): the file holds the types the
// preset's rules give, the CPU backend (weights expanded at load) matches the reference forward
// over the same dequantized weights, and the quantized model stays as near to its f32 original
// as its bits allow, in order: q6_k < q5_k_m < q4_k_m < q3_k_m < q2_k.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "kernels/cpu_backend.hpp"
#include "kernels/reference_model.hpp"
#include "model/gguf.hpp"
#include "model/model_maker.hpp"
#include "model_test_support.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

using test::make_test_model;
using test::rel_error;
using test::test_model;

// Rows of 256 (whole super-blocks) everywhere, 4 heads over 2 KV heads, 3 layers.
constexpr model_preset k_shape{"k256", 256, 3, 4, 2, 512, 600};

const vocab_spec& shared_vocab() {
  static const vocab_spec v = make_vocab(make_options{k_shape, tensor_type::f32, 1});
  return v;
}

std::unique_ptr<test_model> make(std::optional<file_type> mix, uint64_t seed = 17) {
  make_options opt{k_shape, tensor_type::f32, seed, tokenizer_kind::bpe, 512};
  opt.mix = mix;
  REQUIRE(validate(opt).ok());
  return make_test_model(opt, shared_vocab());
}

// The test models' vocabulary (their presets' 600).
std::vector<token_id> random_tokens(size_t n, std::mt19937_64& rng) {
  return test::random_tokens(n, 600, rng);
}

}  // namespace

TEST_CASE("a quantized mix holds the types its preset gives each tensor", "[quantized_models]") {
  const auto m = make(file_type::q4_k_m);
  CHECK(m->file.get_uint("general.file_type") == 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  CHECK(m->file.get_uint("general.quantization_version") == 2u);
  std::map<std::string, int> counts;
  for (const auto& t : m->file.tensors()) {
    ++counts[traits_of(t.type).name];
    if (t.dims.size() == 2) {
      CHECK(t.type == tensor_type_for(file_type::q4_k_m, t.name, t.dims[0], {3, 2, true}));
    }
  }
  // Of 3 layers use_more_bits picks layer 2 only (i >= 7 * 3 / 8; n / 8 = 0 and i % 3 != 2
  // below it), so its attn_v and ffn_down and the head are q6_K, the other 20 matrices q4_K.
  CHECK(counts["q6_K"] == 3);
  CHECK(counts["q4_K"] == 20);
  CHECK(m->file.find_tensor("output.weight")->type == tensor_type::q6_k);
  CHECK(m->file.find_tensor("blk.1.attn_v.weight")->type == tensor_type::q4_k);
}

TEST_CASE("quantized models: the backend matches the reference forward over the same weights",
          "[quantized_models]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const uint64_t model_seed = rng();
  const auto original = make(std::nullopt, model_seed);
  reference_model f32_ref = test::reference_for(original->file);
  const auto prompt = random_tokens(12, rng);
  const auto f32_rows = f32_ref.forward_all(prompt, 0);

  struct mix_bound {
    file_type mix;
    double vs_f32;  // tolerated RMS logit error against the f32 model, relative to its RMS
  };
  // Measured over 16 seeds (model and prompt): q6_k 0.033-0.038, q5_k_m 0.064-0.076, q4_k_m
  // 0.125-0.146, q3_k_m 0.23-0.29, q2_k 0.43-0.50 (random weights carry every layer's error into
  // the logits at about 2-3 times the weights' own); the bounds leave about 30 %.
  std::vector<double> errors;
  for (const auto [mix, bound] : {mix_bound{file_type::q6_k, 0.05}, mix_bound{file_type::q5_k_m, 0.1},
                                  mix_bound{file_type::q4_k_m, 0.19}, mix_bound{file_type::q3_k_m, 0.37},
                                  mix_bound{file_type::q2_k, 0.65}}) {
    INFO(to_string(mix));
    const auto m = make(mix, model_seed);
    reference_model ref = test::reference_for(m->file);
    auto be = cpu_backend::load(
        m->file, {.compute = compute_type::f32, .kv = kv_dtype::f32, .block_size = 16, .kv_tokens = 1024});
    if (!be) FAIL(be.error().message);
    const std::vector<uint32_t> blocks{0, 1};
    batch_logits out;
    const batch_seq seq{prompt, 0, blocks, true};
    REQUIRE((*be)->forward({&seq, 1}, out).ok());
    const auto rows = ref.forward_all(prompt, 0);
    double err2 = 0, ref2 = 0;
    for (uint32_t i = 0; i < prompt.size(); ++i) {
      CHECK(rel_error(out.row(i), rows[i]) <= 1e-4);  // the same weights, two forwards
      for (size_t v = 0; v < rows[i].size(); ++v) {
        err2 += (rows[i][v] - f32_rows[i][v]) * (rows[i][v] - f32_rows[i][v]);
        ref2 += f32_rows[i][v] * f32_rows[i][v];
      }
    }
    const double rms = std::sqrt(err2 / ref2);
    CHECK(rms <= bound);
    errors.push_back(rms);
  }
  for (size_t i = 1; i < errors.size(); ++i) CHECK(errors[i - 1] < errors[i]);
}
