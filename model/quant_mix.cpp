// llama-quantize's presets: src/llama-quant.cpp (llama.cpp commit c392e509), the default type of
// llama_model_quantize_impl's switch and the rules of llama_tensor_get_type, for the dense
// (non-MoE) models without an importance matrix that Hearth writes. Left out on purpose: the IQ
// presets' rules, Falcon's, MoE's (n_expert == 8), and the 70B attn_v bump.
#include "model/quant_mix.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>

namespace hearth {
namespace {

struct file_type_entry {
  file_type ft;
  const char* name;
  tensor_type base;
};

constexpr file_type_entry entries[] = {
    {file_type::f32, "f32", tensor_type::f32},        {file_type::f16, "f16", tensor_type::f16},
    {file_type::q4_0, "q4_0", tensor_type::q4_0},     {file_type::q4_1, "q4_1", tensor_type::q4_1},
    {file_type::q8_0, "q8_0", tensor_type::q8_0},     {file_type::q5_0, "q5_0", tensor_type::q5_0},
    {file_type::q5_1, "q5_1", tensor_type::q5_1},     {file_type::q2_k, "q2_k", tensor_type::q2_k},
    {file_type::q3_k_s, "q3_k_s", tensor_type::q3_k}, {file_type::q3_k_m, "q3_k_m", tensor_type::q3_k},
    {file_type::q3_k_l, "q3_k_l", tensor_type::q3_k}, {file_type::q4_k_s, "q4_k_s", tensor_type::q4_k},
    {file_type::q4_k_m, "q4_k_m", tensor_type::q4_k}, {file_type::q5_k_s, "q5_k_s", tensor_type::q5_k},
    {file_type::q5_k_m, "q5_k_m", tensor_type::q5_k}, {file_type::q6_k, "q6_k", tensor_type::q6_k},
    {file_type::bf16, "bf16", tensor_type::bf16},
};

constexpr file_type all[] = {
    file_type::f32,    file_type::f16,    file_type::q4_0,   file_type::q4_1,   file_type::q8_0,
    file_type::q5_0,   file_type::q5_1,   file_type::q2_k,   file_type::q3_k_s, file_type::q3_k_m,
    file_type::q3_k_l, file_type::q4_k_s, file_type::q4_k_m, file_type::q5_k_s, file_type::q5_k_m,
    file_type::q6_k,   file_type::bf16,
};

const file_type_entry& entry_of(file_type ft) {
  for (const auto& e : entries) {
    if (e.ft == ft) return e;
  }
  return entries[0];  // not reached: every enumerator has an entry
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The tensors the rules tell apart, matched on the name as llama.cpp does (a substring).
enum class role { output, token_embd, attn_v, ffn_down, attn_output, attn_qkv, other };

role role_of(std::string_view name, bool has_output) {
  if (name == "output.weight" || (!has_output && name == "token_embd.weight")) return role::output;
  if (name == "token_embd.weight") return role::token_embd;
  if (contains(name, "attn_v.weight")) return role::attn_v;
  if (contains(name, "ffn_down")) return role::ffn_down;
  if (contains(name, "attn_output.weight")) return role::attn_output;
  if (contains(name, "attn_qkv.weight")) return role::attn_qkv;
  return role::other;
}

// "blk.N." -> N; tensors outside the blocks are layer 0 (no rule below reads their layer).
int layer_of(std::string_view name) {
  int layer = 0;
  const std::string s(name);
  if (std::sscanf(s.c_str(), "blk.%d.", &layer) != 1) return 0;
  return layer;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
bool use_more_bits(int i, int n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// The bump a preset gives one tensor of layer i of n, or nullopt to keep the base type.
std::optional<tensor_type> bumped(file_type ft, role r, int i, int n, uint32_t n_gqa) {
  using t = tensor_type;
  using f = file_type;
  switch (r) {
    case role::attn_v:  // the values: small (n_head_kv rows) and sensitive
      if (ft == f::q2_k) return n_gqa >= 4 ? t::q4_k : t::q3_k;
      if (ft == f::q3_k_m) return i < 2 ? t::q5_k : t::q4_k;
      if (ft == f::q3_k_l) return t::q5_k;
      if ((ft == f::q4_k_m || ft == f::q5_k_m) && use_more_bits(i, n)) return t::q6_k;
      if (ft == f::q4_k_s && i < 4) return t::q5_k;
      return std::nullopt;
    case role::ffn_down:
      if (ft == f::q2_k) return t::q3_k;
      if (ft == f::q3_k_m) return i < n / 16 ? t::q5_k : t::q4_k;
      if (ft == f::q3_k_l) return t::q5_k;
      if ((ft == f::q4_k_m || ft == f::q5_k_m) && use_more_bits(i, n)) return t::q6_k;
      if (ft == f::q4_k_s && i < n / 8) return t::q5_k;
      return std::nullopt;
    case role::attn_output:
      if (ft == f::q2_k) return t::q3_k;
      if (ft == f::q3_k_m) return t::q4_k;
      if (ft == f::q3_k_l) return t::q5_k;
      return std::nullopt;
    case role::attn_qkv:  // fused q/k/v (Phi-3)
      if (ft == f::q3_k_m || ft == f::q3_k_l) return t::q4_k;
      if (ft == f::q4_k_m) return t::q5_k;
      if (ft == f::q5_k_m) return t::q6_k;
      return std::nullopt;
    case role::output:
    case role::token_embd:
    case role::other:
      return std::nullopt;
  }
  return std::nullopt;
}

bool whole_blocks(uint64_t ne0, tensor_type type) {
  return ne0 % traits_of(type).block_size == 0;
}

// llama.cpp's fallback for rows that are not whole super-blocks: the 32-element type of about
// the same size (llama.cpp refuses a file whose rows are not even whole 32-element blocks;
// validate() in model_maker.cpp refuses it before this is asked).
tensor_type fallback(tensor_type type, uint64_t ne0) {
  tensor_type to = tensor_type::f16;
  switch (type) {
    case tensor_type::q2_k:
    case tensor_type::q3_k:
      to = tensor_type::iq4_nl;
      break;
    case tensor_type::q4_k:
      to = tensor_type::q5_0;
      break;
    case tensor_type::q5_k:
      to = tensor_type::q5_1;
      break;
    case tensor_type::q6_k:
      to = tensor_type::q8_0;
      break;
    default:
      break;
  }
  return whole_blocks(ne0, to) ? to : tensor_type::f16;
}

}  // namespace

std::span<const file_type> file_types() {
  return all;
}

const char* to_string(file_type ft) {
  return entry_of(ft).name;
}

std::optional<file_type> file_type_from_name(std::string_view name) {
  for (const auto& e : entries) {
    const std::string_view n = e.name;
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return a == std::tolower(static_cast<unsigned char>(b));
        })) {
      return e.ft;
    }
  }
  return std::nullopt;
}

tensor_type base_type(file_type ft) {
  return entry_of(ft).base;
}

std::optional<file_type> file_type_of(tensor_type t) {
  switch (t) {
    case tensor_type::f32:
      return file_type::f32;
    case tensor_type::f16:
      return file_type::f16;
    case tensor_type::bf16:
      return file_type::bf16;
    case tensor_type::q4_0:
      return file_type::q4_0;
    case tensor_type::q4_1:
      return file_type::q4_1;
    case tensor_type::q5_0:
      return file_type::q5_0;
    case tensor_type::q5_1:
      return file_type::q5_1;
    case tensor_type::q8_0:
      return file_type::q8_0;
    case tensor_type::q2_k:
      return file_type::q2_k;
    case tensor_type::q3_k:
      return file_type::q3_k_m;
    case tensor_type::q4_k:
      return file_type::q4_k_m;
    case tensor_type::q5_k:
      return file_type::q5_k_m;
    case tensor_type::q6_k:
      return file_type::q6_k;
    case tensor_type::q8_k:
    case tensor_type::iq4_nl:
      return std::nullopt;
  }
  return std::nullopt;
}

bool is_quantized_tensor(std::string_view name, size_t n_dims) {
  return n_dims >= 2 && ends_with(name, "weight") && !contains(name, "_norm.weight");
}

tensor_type tensor_type_for(file_type ft, std::string_view name, uint64_t ne0, const mix_model& m) {
  const tensor_type base = base_type(ft);
  if (traits_of(base).block_size == 1) return base;  // f32/f16/bf16: no rules (llama.cpp: none)
  const role r = role_of(name, m.has_output);
  tensor_type type = base;
  if (r == role::output) {
    // The head: q6_K unless the file is q8_0; q8_0 when its rows are not whole blocks of the base.
    type = !whole_blocks(ne0, base)    ? tensor_type::q8_0
           : base == tensor_type::q8_0 ? base
                                       : tensor_type::q6_k;
  } else if (const auto b = bumped(ft, r, layer_of(name), static_cast<int>(m.n_layer), m.n_gqa)) {
    type = *b;
  }
  return whole_blocks(ne0, type) ? type : fallback(type, ne0);
}

}  // namespace hearth
