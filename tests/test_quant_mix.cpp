// llama-quantize's presets: file type numbers and each tensor's type, stated from llama.cpp's
// src/llama-quant.cpp rules (llama_tensor_get_type) for dense Llama models.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "model/quant_mix.hpp"

using namespace hearth;

namespace {

// The matrices of a Llama model of n layers, as GGUF names them.
std::vector<std::string> matrix_names(int n_layer) {
  std::vector<std::string> names{"token_embd.weight", "output.weight"};
  for (int i = 0; i < n_layer; ++i) {
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      names.push_back("blk." + std::to_string(i) + "." + m + ".weight");
    }
  }
  return names;
}

// Counts of each type over a model's matrices, all rows `ne0` long (ffn_down: `ne0_down`).
std::map<std::string, int> type_counts(file_type ft, int n_layer, uint32_t n_gqa, uint64_t ne0,
                                       uint64_t ne0_down) {
  std::map<std::string, int> counts;
  const mix_model m{static_cast<uint32_t>(n_layer), n_gqa, true};
  for (const auto& name : matrix_names(n_layer)) {
    const uint64_t row = name.find("ffn_down") != std::string::npos ? ne0_down : ne0;
    ++counts[traits_of(tensor_type_for(ft, name, row, m)).name];
  }
  return counts;
}

tensor_type type_of(file_type ft, const std::string& name, const mix_model& m, uint64_t ne0 = 4096) {
  return tensor_type_for(ft, name, ne0, m);
}

}  // namespace

TEST_CASE("file types are llama.cpp's LLAMA_FTYPE numbers", "[quant_mix]") {
  // include/llama.h enum llama_ftype.
  const std::map<std::string, uint32_t> numbers{
      {"f32", 0},     {"f16", 1},     {"q4_0", 2},    {"q4_1", 3},    {"q8_0", 7},    {"q5_0", 8},
      {"q5_1", 9},    {"q2_k", 10},   {"q3_k_s", 11}, {"q3_k_m", 12}, {"q3_k_l", 13}, {"q4_k_s", 14},
      {"q4_k_m", 15}, {"q5_k_s", 16}, {"q5_k_m", 17}, {"q6_k", 18},   {"bf16", 32}};
  CHECK(file_types().size() == numbers.size());
  for (const file_type ft : file_types()) {
    INFO(to_string(ft));
    REQUIRE(numbers.count(to_string(ft)) == 1);
    CHECK(static_cast<uint32_t>(ft) == numbers.at(to_string(ft)));
    CHECK(file_type_from_name(to_string(ft)) == ft);
  }
  CHECK(file_type_from_name("Q4_K_M") == file_type::q4_k_m);
  CHECK_FALSE(file_type_from_name("q4_k"));
  CHECK(base_type(file_type::q3_k_l) == tensor_type::q3_k);
  CHECK(base_type(file_type::q5_k_s) == tensor_type::q5_k);
  // A file of one type records what llama.cpp's loader guesses for it.
  CHECK(file_type_of(tensor_type::q4_k) == file_type::q4_k_m);
  CHECK(file_type_of(tensor_type::q3_k) == file_type::q3_k_m);
  CHECK(file_type_of(tensor_type::q8_0) == file_type::q8_0);
  CHECK_FALSE(file_type_of(tensor_type::iq4_nl));
}

TEST_CASE("q4_k_m on a TinyLlama-1.1B shape: 135 q4_K and 21 q6_K tensors", "[quant_mix]") {
  // 22 layers, 32 heads over 4 KV heads, width 2048, ffn 5632 (the 1b preset). llama.cpp's own
  // llama_model_quantize (build b4748) gives the 1b preset's f32 file 135 q4_K and 21 q6_K
  // tensors: the head, and attn_v and ffn_down in layers 0, 1, 4, 7, 10, 13, 16, 19, 20, 21
  // (use_more_bits: the first and last eighth, and every third between).
  const auto counts = type_counts(file_type::q4_k_m, 22, 8, 2048, 5632);
  CHECK(counts == std::map<std::string, int>{{"q4_K", 135}, {"q6_K", 21}});
  const mix_model m{22, 8, true};
  for (int i : {0, 1, 4, 7, 10, 13, 16, 19, 20, 21}) {
    CHECK(type_of(file_type::q4_k_m, "blk." + std::to_string(i) + ".attn_v.weight", m) == tensor_type::q6_k);
    CHECK(type_of(file_type::q4_k_m, "blk." + std::to_string(i) + ".ffn_down.weight", m) ==
          tensor_type::q6_k);
  }
  for (int i : {2, 3, 5, 6, 8, 18}) {
    CHECK(type_of(file_type::q4_k_m, "blk." + std::to_string(i) + ".attn_v.weight", m) == tensor_type::q4_k);
  }
}

TEST_CASE("each preset bumps the tensors llama.cpp bumps", "[quant_mix]") {
  const mix_model mha{32, 1, true};  // Llama-2-7B-like: 32 layers, no GQA
  const mix_model gqa{32, 8, true};
  using f = file_type;
  using t = tensor_type;
  // The head: q6_K in every quantized preset but q8_0.
  for (const file_type ft :
       {f::q4_0, f::q4_1, f::q5_0, f::q5_1, f::q2_k, f::q3_k_s, f::q4_k_s, f::q5_k_m, f::q6_k}) {
    INFO(to_string(ft));
    CHECK(type_of(ft, "output.weight", mha) == t::q6_k);
    CHECK(type_of(ft, "token_embd.weight", mha) == base_type(ft));
    CHECK(type_of(ft, "blk.9.attn_q.weight", mha) == base_type(ft));
    CHECK(type_of(ft, "blk.9.ffn_up.weight", mha) == base_type(ft));
  }
  CHECK(type_of(f::q8_0, "output.weight", mha) == t::q8_0);
  for (const file_type ft : {f::f32, f::f16, f::bf16})
    CHECK(type_of(ft, "output.weight", mha) == base_type(ft));
  // q2_k: attn_v q3_K (q4_K with 4+ heads per KV head), ffn_down and attn_output q3_K.
  CHECK(type_of(f::q2_k, "blk.5.attn_v.weight", mha) == t::q3_k);
  CHECK(type_of(f::q2_k, "blk.5.attn_v.weight", gqa) == t::q4_k);
  CHECK(type_of(f::q2_k, "blk.5.ffn_down.weight", mha) == t::q3_k);
  CHECK(type_of(f::q2_k, "blk.5.attn_output.weight", mha) == t::q3_k);
  // q3_k_s: nothing but the head.
  CHECK(type_of(f::q3_k_s, "blk.0.attn_v.weight", mha) == t::q3_k);
  CHECK(type_of(f::q3_k_s, "blk.0.ffn_down.weight", mha) == t::q3_k);
  // q3_k_m: attn_v q5_K in layers 0-1 then q4_K; ffn_down q5_K in the first 1/16, then q4_K;
  // attn_output q4_K.
  CHECK(type_of(f::q3_k_m, "blk.1.attn_v.weight", mha) == t::q5_k);
  CHECK(type_of(f::q3_k_m, "blk.2.attn_v.weight", mha) == t::q4_k);
  CHECK(type_of(f::q3_k_m, "blk.1.ffn_down.weight", mha) == t::q5_k);
  CHECK(type_of(f::q3_k_m, "blk.2.ffn_down.weight", mha) == t::q4_k);
  CHECK(type_of(f::q3_k_m, "blk.2.attn_output.weight", mha) == t::q4_k);
  CHECK(type_of(f::q3_k_m, "blk.2.attn_k.weight", mha) == t::q3_k);
  // q3_k_l: attn_v, ffn_down, attn_output q5_K.
  for (const char* n : {"blk.20.attn_v.weight", "blk.20.ffn_down.weight", "blk.20.attn_output.weight"})
    CHECK(type_of(f::q3_k_l, n, mha) == t::q5_k);
  // q4_k_s: attn_v q5_K in layers 0-3, ffn_down q5_K in the first eighth.
  CHECK(type_of(f::q4_k_s, "blk.3.attn_v.weight", mha) == t::q5_k);
  CHECK(type_of(f::q4_k_s, "blk.4.attn_v.weight", mha) == t::q4_k);
  CHECK(type_of(f::q4_k_s, "blk.3.ffn_down.weight", mha) == t::q5_k);
  CHECK(type_of(f::q4_k_s, "blk.4.ffn_down.weight", mha) == t::q4_k);
  // q5_k_m: attn_v and ffn_down q6_K where use_more_bits; q5_k_s: nothing.
  CHECK(type_of(f::q5_k_m, "blk.31.attn_v.weight", mha) == t::q6_k);
  CHECK(type_of(f::q5_k_m, "blk.5.ffn_down.weight", mha) == t::q5_k);  // (5 - 4) % 3 != 2
  CHECK(type_of(f::q5_k_m, "blk.6.ffn_down.weight", mha) == t::q6_k);  // (6 - 4) % 3 == 2
  CHECK(type_of(f::q5_k_s, "blk.0.attn_v.weight", mha) == t::q5_k);
  // Fused q/k/v (Phi-3): one step up in the _M mixes.
  CHECK(type_of(f::q4_k_m, "blk.0.attn_qkv.weight", mha) == t::q5_k);
  CHECK(type_of(f::q5_k_m, "blk.0.attn_qkv.weight", mha) == t::q6_k);
}

TEST_CASE("rows that are not whole super-blocks fall back as llama.cpp does", "[quant_mix]") {
  const mix_model m{6, 1, true};
  using f = file_type;
  using t = tensor_type;
  // 288-wide rows (the tiny preset): q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0, q2/q3_K -> iq4_nl.
  CHECK(type_of(f::q4_k_m, "blk.2.attn_q.weight", m, 288) == t::q5_0);
  // Of 6 layers use_more_bits picks 2 and 5 (7 * 6 / 8 = 5; (i - 0) % 3 == 2).
  CHECK(type_of(f::q4_k_m, "blk.5.attn_v.weight", m, 288) == t::q8_0);  // bumped to q6_K first
  CHECK(type_of(f::q4_k_m, "blk.0.attn_v.weight", m, 288) == t::q5_0);
  CHECK(type_of(f::q5_k_s, "blk.2.attn_q.weight", m, 288) == t::q5_1);
  CHECK(type_of(f::q6_k, "blk.2.attn_q.weight", m, 288) == t::q8_0);
  CHECK(type_of(f::q3_k_m, "blk.2.attn_q.weight", m, 288) == t::iq4_nl);
  CHECK(type_of(f::q2_k, "token_embd.weight", m, 288) == t::iq4_nl);
  // The head goes straight to q8_0 when its rows are not whole blocks of the file's type.
  CHECK(type_of(f::q4_k_m, "output.weight", m, 288) == t::q8_0);
  CHECK(type_of(f::q4_0, "output.weight", m, 288) == t::q8_0);  // q6_K's 256 do not divide 288
  // 768-wide ffn_down rows are whole super-blocks.
  CHECK(type_of(f::q4_k_m, "blk.1.ffn_down.weight", m, 768) == t::q4_k);
  CHECK(type_of(f::q4_k_m, "blk.2.ffn_down.weight", m, 768) == t::q6_k);
  // Rows of no whole 32-element blocks end in f16.
  CHECK(type_of(f::q4_k_m, "blk.2.attn_q.weight", m, 100) == t::f16);
}

TEST_CASE("a tied embedding is typed as the head", "[quant_mix]") {
  const mix_model tied{22, 8, false}, untied{22, 8, true};
  CHECK(tensor_type_for(file_type::q4_k_m, "token_embd.weight", 2048, tied) == tensor_type::q6_k);
  CHECK(tensor_type_for(file_type::q4_k_m, "token_embd.weight", 2048, untied) == tensor_type::q4_k);
  CHECK(tensor_type_for(file_type::q8_0, "token_embd.weight", 2048, tied) == tensor_type::q8_0);
  CHECK(is_quantized_tensor("blk.0.attn_q.weight", 2));
  CHECK_FALSE(is_quantized_tensor("blk.0.attn_norm.weight", 2));
  CHECK_FALSE(is_quantized_tensor("blk.0.attn_q.bias", 2));
  CHECK_FALSE(is_quantized_tensor("rope_freqs.weight", 1));
}
