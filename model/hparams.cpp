#include "model/hparams.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "model/gguf.hpp"

namespace hearth {
namespace {

// Bounds far above any real Llama-family model; they keep arithmetic on these numbers small.
constexpr uint64_t max_embd = 1u << 16;
constexpr uint64_t max_layers = 1024;
constexpr uint64_t max_heads = 1024;
constexpr uint64_t max_ff = 1u << 20;
constexpr uint64_t max_vocab = 1u << 22;
constexpr uint64_t max_ctx = 1u << 24;

error bad(std::string msg) {
  return error{errc::malformed, "model: " + std::move(msg)};
}

// Reads `<arch>.<key>` as an integer in [1, max]; `fallback` (0 = required) when absent.
result<uint32_t> read_dim(const gguf::file& f, const std::string& arch, const char* key, uint64_t max,
                          uint64_t fallback = 0) {
  const std::string full = arch + "." + key;
  const auto v = f.get_uint(full);
  if (!v && f.find(full)) return bad(full + " is not a non-negative integer");
  if (!v && fallback == 0) return bad("missing " + full);
  const uint64_t n = v ? *v : fallback;
  if (n < 1 || n > max)
    return bad(full + " = " + std::to_string(n) + " is outside [1, " + std::to_string(max) + "]");
  return static_cast<uint32_t>(n);
}

result<float> read_positive_float(const gguf::file& f, const std::string& key, double fallback) {
  const auto v = f.get_float(key);
  if (!v && f.find(key)) return bad(key + " is not a float");
  const double x = v ? *v : fallback;
  if (!(x > 0.0 && x < 1e12)) return bad(key + " = " + std::to_string(x) + " must be positive and finite");
  return static_cast<float>(x);
}

result<model_arch> read_arch(const gguf::file& f) {
  const std::string* arch = f.get_string("general.architecture");
  if (!arch) return bad("missing general.architecture");
  if (*arch == "llama") return model_arch::llama;
  if (*arch == "qwen2") return model_arch::qwen2;
  if (*arch == "qwen3") return model_arch::qwen3;
  if (*arch == "phi3") return model_arch::phi3;
  if (*arch == "gemma2") return model_arch::gemma2;
  if (*arch == "gemma3") return model_arch::gemma3;
  return error{errc::unsupported,
               "model: unsupported architecture '" + *arch +
                   "' (Hearth runs the Llama family: llama, qwen2, qwen3, phi3, gemma2, gemma3)"};
}

// Dimensions: embedding, layers, heads, FFN, context, vocabulary.
status<> read_shape(const gguf::file& f, const std::string& a, hparams& hp) {
  struct field {
    uint32_t& out;
    const char* key;
    uint64_t max;
    uint64_t fallback;
  };
  const auto* token_embd = f.find_tensor("token_embd.weight");
  if (!token_embd || token_embd->dims.size() != 2) return bad("missing 2-D tensor token_embd.weight");
  hp.n_vocab = token_embd->dims[1] <= max_vocab ? static_cast<uint32_t>(token_embd->dims[1]) : 0;
  for (const field& fd :
       {field{hp.n_embd, "embedding_length", max_embd, 0}, field{hp.n_layer, "block_count", max_layers, 0},
        field{hp.n_head, "attention.head_count", max_heads, 0},
        field{hp.n_ff, "feed_forward_length", max_ff, 0}, field{hp.n_ctx_train, "context_length", max_ctx, 0},
        field{hp.n_vocab, "vocab_size", max_vocab, hp.n_vocab}}) {
    auto v = read_dim(f, a, fd.key, fd.max, fd.fallback);
    if (!v) return v.error();
    fd.out = *v;
  }
  for (const field& fd : {field{hp.n_head_kv, "attention.head_count_kv", max_heads, hp.n_head},
                          field{hp.head_dim, "attention.key_length", max_embd, hp.n_embd / hp.n_head}}) {
    auto v = read_dim(f, a, fd.key, fd.max, fd.fallback);
    if (!v) return v.error();
    fd.out = *v;
  }
  auto n_rot = read_dim(f, a, "rope.dimension_count", hp.head_dim, hp.head_dim);
  if (!n_rot) return n_rot.error();
  hp.n_rot = *n_rot;
  return {};
}

status<> check_consistency(const gguf::file& f, const hparams& hp) {
  if (hp.n_head % hp.n_head_kv != 0) {
    return bad("head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
               std::to_string(hp.n_head_kv));
  }
  if (hp.n_rot % 2 != 0) return bad("rope.dimension_count must be even");
  const auto* token_embd = f.find_tensor("token_embd.weight");
  if (token_embd->dims[0] != hp.n_embd || token_embd->dims[1] != hp.n_vocab) {
    return bad("token_embd.weight is not [" + std::to_string(hp.n_embd) + ", " + std::to_string(hp.n_vocab) +
               "]");
  }
  return {};
}

// Llama 3.1 frequency smoothing, as llama.cpp's converter computes `rope_freqs.weight`:
// long wavelengths are divided by `factor`, short ones kept, the band between interpolated.
std::vector<float> llama3_freq_factors(const hparams& hp, double factor, double low, double high,
                                       double orig_ctx) {
  constexpr double pi = 3.14159265358979323846;
  std::vector<float> out(hp.n_rot / 2);
  for (uint32_t i = 0; i < hp.n_rot / 2; ++i) {
    const double wavelen = 2 * pi / std::pow(hp.rope_freq_base, -2.0 * i / hp.n_rot);
    if (wavelen < orig_ctx / high) {
      out[i] = 1.0f;
    } else if (wavelen > orig_ctx / low) {
      out[i] = static_cast<float>(factor);
    } else {
      const double smooth = (orig_ctx / wavelen - low) / (high - low);
      out[i] = static_cast<float>(1.0 / ((1 - smooth) / factor + smooth));
    }
  }
  return out;
}

// One divisor per rotary pair, from a 1-D f32 tensor (rope_freqs, or Phi-3's rope_factors_*).
result<std::vector<float>> read_freq_tensor(const gguf::file& f, const hparams& hp, const std::string& name) {
  const auto* t = f.find_tensor(name);
  if (t->type != tensor_type::f32 || t->dims.size() != 1 || t->dims[0] != hp.n_rot / 2) {
    return bad(name + " must be f32 [" + std::to_string(hp.n_rot / 2) + "]");
  }
  std::vector<float> out(hp.n_rot / 2);
  dequantize(t->type, f.data(*t), out);
  for (float x : out) {
    if (!(x > 0.0f && x < 1e6f)) return bad(name + " holds a factor that is not positive and finite");
  }
  return out;
}

// Phi-3's LongRoPE: llama.cpp rotates with rope_factors_short while a sequence's context is at
// most rope.scaling.original_context_length and with rope_factors_long beyond it, and scales
// every cos and sin by rope.scaling.attn_factor in both cases. Hearth rotates with the short
// factors and serves contexts up to the original length, where the two agree exactly; past it
// the long factors would apply to every position, which one shared table cannot give.
status<> read_long_rope(const gguf::file& f, const std::string& a, hparams& hp) {
  const bool has_long = f.find_tensor("rope_factors_long.weight") != nullptr;
  const bool has_short = f.find_tensor("rope_factors_short.weight") != nullptr;
  if (!has_long && !has_short) return {};
  if (has_long != has_short)
    return bad("rope_factors_long.weight and rope_factors_short.weight come in pairs");
  auto long_f = read_freq_tensor(f, hp, "rope_factors_long.weight");
  if (!long_f) return long_f.error();
  auto short_f = read_freq_tensor(f, hp, "rope_factors_short.weight");
  if (!short_f) return short_f.error();
  auto attn = read_positive_float(f, a + ".rope.scaling.attn_factor", 1.0);
  if (!attn) return attn.error();
  hp.rope_attn_factor = *attn;
  if (*long_f != *short_f) {
    auto orig = read_dim(f, a, "rope.scaling.original_context_length", max_ctx);
    if (!orig) return orig.error();
    hp.n_ctx_train = std::min(hp.n_ctx_train, *orig);
  }
  hp.rope_freq_factors = std::move(*short_f);
  return {};
}

// Phi-3-mini-4k attends over a window of 2047 positions (`phi3.attention.sliding_window`; 0 or
// absent: none). Positions within the window see every earlier one, so Hearth serves contexts up
// to the window, where full attention is the same computation.
status<> read_sliding_window(const gguf::file& f, const std::string& a, hparams& hp) {
  const std::string key = a + ".attention.sliding_window";
  const auto v = f.get_uint(key);
  if (!v && f.find(key)) return bad(key + " is not a non-negative integer");
  if (v && *v > 0 && *v < hp.n_ctx_train) hp.n_ctx_train = static_cast<uint32_t>(*v);
  return {};
}

// K and V heads share one head dimension in Hearth's cache (and in llama.cpp's qwen3 graph).
status<> check_value_length(const gguf::file& f, const std::string& a, const hparams& hp) {
  const auto v_len = f.get_uint(a + ".attention.value_length");
  if (v_len && *v_len != hp.head_dim) {
    return bad(a + ".attention.value_length = " + std::to_string(*v_len) +
               " differs from attention.key_length " + std::to_string(hp.head_dim));
  }
  return {};
}

// `<arch>.attention.sliding_window`: gemma2's default is 4096 (llama.cpp's, for files without
// the key), gemma3's is required.
status<> read_swa(const gguf::file& f, const std::string& a, hparams& hp) {
  const std::string key = a + ".attention.sliding_window";
  const auto v = f.get_uint(key);
  if (!v && f.find(key)) return bad(key + " is not a non-negative integer");
  if (!v && hp.arch == model_arch::gemma3) return bad("missing " + key);
  const uint64_t n = v ? *v : 4096;
  // A window of 0 would hide every key, the query's own too (llama.cpp's mask: p - t >= 0).
  if (n < 1 || n > max_ctx)
    return bad(key + " = " + std::to_string(n) + " is outside [1, " + std::to_string(max_ctx) + "]");
  hp.n_swa = static_cast<uint32_t>(n);
  hp.swa_pattern = hp.arch == model_arch::gemma2 ? 2 : 6;
  return {};
}

// Gemma 2 and 3 as llama.cpp runs them (b4748's build_gemma2, llm_build_gemma3 of mid-2025):
// the converter already stored every norm weight as 1 + w, so the norms are plain RMS norms.
status<> read_gemma(const gguf::file& f, const std::string& a, hparams& hp) {
  if (auto s = check_value_length(f, a, hp); !s) return s;
  if (auto s = read_swa(f, a, hp); !s) return s;
  hp.act = ffn_activation::gelu;
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  hp.has_post_norms = true;
  // llama.cpp scales q by 1/sqrt(head_dim), but by 1/sqrt(n_embd / n_head) for the 27B models,
  // which it knows by their layer count (46 in gemma2, 62 in gemma3): query_pre_attn_scalar
  // itself is not read.
  const bool is_27b = hp.n_layer == (hp.arch == model_arch::gemma2 ? 46u : 62u);
  hp.attn_scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? hp.n_embd / hp.n_head : hp.head_dim));
  const std::string final_key = a + ".final_logit_softcapping";
  if (hp.arch == model_arch::gemma2) {
    // llama.cpp b4748 reads gemma2's head as token_embd itself: a file with output.weight has a
    // tensor too many for it.
    if (f.find_tensor("output.weight"))
      return bad("gemma2 ties its head to token_embd.weight: output.weight is not one of its tensors");
    auto attn_cap = read_positive_float(f, a + ".attn_logit_softcapping", 50.0);
    if (!attn_cap) return attn_cap.error();
    auto final_cap = read_positive_float(f, final_key, 30.0);
    if (!final_cap) return final_cap.error();
    hp.attn_softcap = *attn_cap;
    hp.final_softcap = *final_cap;
    return {};
  }
  // gemma3: q/k norms like qwen3's, sliding layers with their own RoPE base, no attention capping;
  // later llama.cpp reads an optional final capping (Gemma 3 files carry none).
  hp.has_qk_norm = true;
  hp.rope_freq_base_swa = 10000.0f;
  if (f.find(final_key)) {
    auto final_cap = read_positive_float(f, final_key, 0.0);
    if (!final_cap) return final_cap.error();
    hp.final_softcap = *final_cap;
  }
  return {};
}

// What sets qwen3, phi3 and gemma apart from llama, checked the way llama.cpp's loader relies on it.
status<> read_family(const gguf::file& f, const std::string& a, hparams& hp) {
  if (hp.arch == model_arch::gemma2 || hp.arch == model_arch::gemma3) return read_gemma(f, a, hp);
  if (hp.arch == model_arch::qwen3) {
    // llama.cpp's qwen3 graph asserts that the whole head rotates and that K and V heads match.
    if (auto s = check_value_length(f, a, hp); !s) return s;
    if (hp.n_rot != hp.head_dim) {
      return bad(a + ".rope.dimension_count = " + std::to_string(hp.n_rot) +
                 " must equal the head dimension " + std::to_string(hp.head_dim));
    }
    hp.has_qk_norm = true;
  }
  if (hp.arch == model_arch::phi3) {
    // Phi-3's output projection is (n_embd, n_embd): the heads tile the width exactly.
    if (uint64_t{hp.n_head} * hp.head_dim != hp.n_embd) {
      return bad(a + ".attention.key_length = " + std::to_string(hp.head_dim) + " times head_count " +
                 std::to_string(hp.n_head) + " must equal embedding_length " + std::to_string(hp.n_embd));
    }
    hp.fused_qkv = true;
    hp.fused_gate_up = true;
    if (auto s = read_sliding_window(f, a, hp); !s) return s;
    if (auto s = read_long_rope(f, a, hp); !s) return s;
  }
  return {};
}

// Scaling from keys, when the file carries no rope_freqs.weight tensor.
status<> read_rope_scaling_keys(const gguf::file& f, const std::string& a, hparams& hp) {
  const std::string* type = f.get_string(a + ".rope.scaling.type");
  if (!type || *type == "none") return {};
  if (*type != "llama3" && *type != "linear") {
    return error{errc::unsupported, "model: unsupported rope scaling type '" + *type + "' (llama3, linear)"};
  }
  double v[3];
  const std::tuple<const char*, double> keys[] = {{".rope.scaling.factor", 8.0},
                                                  {".rope.scaling.low_freq_factor", 1.0},
                                                  {".rope.scaling.high_freq_factor", 4.0}};
  for (int i = 0; i < 3; ++i) {
    auto x = read_positive_float(f, a + std::get<0>(keys[i]), std::get<1>(keys[i]));
    if (!x) return x.error();
    v[i] = *x;
  }
  if (*type == "linear") {
    hp.rope_freq_factors.assign(hp.n_rot / 2, static_cast<float>(v[0]));
    return {};
  }
  auto orig = read_dim(f, a, "rope.scaling.original_context_length", max_ctx, 8192);
  if (!orig) return orig.error();
  if (v[2] <= v[1]) return bad("rope.scaling.high_freq_factor must exceed low_freq_factor");
  hp.rope_freq_factors = llama3_freq_factors(hp, v[0], v[1], v[2], *orig);
  return {};
}

// RoPE: base frequency, pairing by architecture, optional frequency factors.
status<> read_rope(const gguf::file& f, const std::string& a, hparams& hp) {
  auto base = read_positive_float(f, a + ".rope.freq_base", 10000.0);
  if (!base) return base.error();
  hp.rope_freq_base = *base;
  hp.pairing = hp.arch == model_arch::llama ? rope_pairing::adjacent : rope_pairing::halves;
  if (f.find_tensor("rope_freqs.weight")) {
    auto factors = read_freq_tensor(f, hp, "rope_freqs.weight");
    if (!factors) return factors.error();
    hp.rope_freq_factors = std::move(*factors);
    return {};
  }
  return read_rope_scaling_keys(f, a, hp);
}

}  // namespace

const char* to_string(model_arch a) {
  switch (a) {
    case model_arch::llama:
      return "llama";
    case model_arch::qwen2:
      return "qwen2";
    case model_arch::qwen3:
      return "qwen3";
    case model_arch::phi3:
      return "phi3";
    case model_arch::gemma2:
      return "gemma2";
    case model_arch::gemma3:
      return "gemma3";
  }
  return "llama";  // unreachable: every architecture is listed
}

float hparams::kq_scale() const {
  return attn_scale > 0.0f ? attn_scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

hparams::layer_rope hparams::rope_of(uint32_t layer) const {
  if (rope_freq_base_swa > 0.0f && is_swa(layer)) return {rope_freq_base_swa, {}};
  return {rope_freq_base, rope_freq_factors};
}

result<hparams> read_hparams(const gguf::file& f) {
  auto arch = read_arch(f);
  if (!arch) return arch.error();
  hparams hp;
  hp.arch = *arch;
  const std::string a = to_string(hp.arch);
  if (const std::string* name = f.get_string("general.name")) hp.name = *name;
  if (auto s = read_shape(f, a, hp); !s) return s.error();
  if (auto s = check_consistency(f, hp); !s) return s.error();
  auto eps = read_positive_float(f, a + ".attention.layer_norm_rms_epsilon", 1e-5);
  if (!eps) return eps.error();
  hp.rms_eps = *eps;
  if (auto s = read_rope(f, a, hp); !s) return s.error();
  if (auto s = read_family(f, a, hp); !s) return s.error();
  hp.has_qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  hp.tied_output = f.find_tensor("output.weight") == nullptr;
  return hp;
}

}  // namespace hearth
