#include "model/model_maker.hpp"

#include <cassert>
#include <cmath>
#include <string>
#include <vector>

#include "common/rng.hpp"
#include "model/llama_weights.hpp"
#include "model/vocab_builder.hpp"

namespace hearth {
namespace {

constexpr model_preset presets[] = {
    {"tiny", 288, 6, 6, 6, 768, 32000},
    {"small", 768, 12, 12, 12, 2048, 32000},
    {"1b", 2048, 22, 32, 4, 5632, 32000},
};

// One tensor's recipe: its values are offset + uniform in [-amplitude, amplitude] (amplitude 0:
// all ones), from an xoshiro256** stream seeded by (model seed, tensor index) so tensors are
// independent of each other.
struct tensor_recipe {
  std::string name;
  std::vector<uint64_t> dims;  // ne: {in, out} for matrices
  tensor_type type;
  double amplitude;
  uint64_t stream;
  double offset = 0.0;
};

gguf::writer::fill_fn filler(tensor_recipe r) {
  return [r](std::span<std::byte> out) {
    const uint64_t row = r.dims[0];
    const uint64_t row_bytes = *bytes_for(r.type, row);
    std::vector<float> values(row);
    rng random(r.stream);
    for (uint64_t off = 0; off < out.size(); off += row_bytes) {
      for (float& v : values) {
        v = r.amplitude == 0.0 ? 1.0f : static_cast<float>(r.offset + (2.0 * random.unit() - 1.0) * r.amplitude);
      }
      quantize(r.type, values, out.subspan(off, row_bytes));
    }
  };
}

bool is_gemma(model_arch a) {
  return a == model_arch::gemma2 || a == model_arch::gemma3;
}

// Gemma's files always tie the head to the embedding (llama.cpp b4748's gemma2 loader reads no
// output.weight at all).
bool tied(const make_options& opt) {
  return opt.tie_output || is_gemma(opt.arch);
}

// Uniform amplitude giving standard deviation 1/sqrt(fan_in): activations keep their scale.
double amplitude_for(uint64_t fan_in) { return std::sqrt(3.0 / static_cast<double>(fan_in)); }

// The shape the preset describes, as read_hparams would report it from the written file.
hparams preset_hparams(const make_options& opt) {
  const auto& p = opt.preset;
  hparams hp;
  hp.n_vocab = p.n_vocab;
  hp.n_embd = p.n_embd;
  hp.n_layer = p.n_layer;
  hp.n_head = p.n_head;
  hp.n_head_kv = p.n_head_kv;
  hp.n_ff = p.n_ff;
  hp.head_dim = p.n_embd / p.n_head;
  hp.arch = opt.arch;
  hp.has_qkv_bias = opt.arch == model_arch::qwen2;
  hp.has_qk_norm = opt.arch == model_arch::qwen3 || opt.arch == model_arch::gemma3;
  hp.fused_qkv = hp.fused_gate_up = opt.arch == model_arch::phi3;
  hp.has_post_norms = is_gemma(opt.arch);
  hp.tied_output = tied(opt);
  return hp;
}

std::vector<tensor_recipe> recipes(const make_options& opt) {
  std::vector<tensor_recipe> r;
  for (weight_desc& d : llama_weights(preset_hparams(opt))) {
    const bool matrix = d.dims.size() == 2;
    const tensor_type type = matrix ? matrix_type(opt, d.name, d.dims[0]) : tensor_type::f32;
    // Embeddings: unit variance per element as they enter the residual stream (Gemma's are
    // multiplied by sqrt(n_embd) first, so they are stored with variance 1 / n_embd: else each
    // token's own embedding would outweigh the layers and, with the tied head, greedy decoding
    // would only repeat the last token); other matrices 1/sqrt(fan_in); biases small; norms ones.
    const bool bias = d.kind == weight_kind::attn_q_bias || d.kind == weight_kind::attn_k_bias ||
                      d.kind == weight_kind::attn_v_bias;
    const double embd_amp = is_gemma(opt.arch) ? amplitude_for(opt.preset.n_embd) : std::sqrt(3.0);
    const double amp = d.kind == weight_kind::token_embd ? embd_amp
                       : matrix                          ? amplitude_for(d.dims[0])
                       : bias                            ? 0.2
                                                         : 0.0;
    // Qwen 3's and Gemma's q/k norm weights are far from ones in real files, and so are Gemma's
    // post-norms; here 1 +- 0.5, so that a swap of two (or of heads) shows in the logits, which
    // all-ones norms would hide.
    const bool far_norm = d.kind == weight_kind::attn_q_norm || d.kind == weight_kind::attn_k_norm ||
                          d.kind == weight_kind::attn_post_norm || d.kind == weight_kind::ffn_post_norm;
    r.push_back({std::move(d.name), std::move(d.dims), type, far_norm ? 0.5 : amp,
                 opt.seed * 0x100000001b3ull + r.size(), far_norm ? 1.0 : 0.0});
  }
  return r;
}

// What Gemma's converters write beyond the common keys: head sizes, the sliding window, and
// gemma2's soft-capping (Gemma 2's own 50 and 30). The window is short (gemma2-2b's is 4096) so
// that a prompt of a few dozen tokens slides on the sliding layers.
void set_gemma_hparams(const make_options& opt, gguf::writer& w) {
  const std::string a = to_string(opt.arch);
  w.set(a + ".attention.key_length", opt.preset.n_embd / opt.preset.n_head);
  w.set(a + ".attention.value_length", opt.preset.n_embd / opt.preset.n_head);
  w.set(a + ".attention.sliding_window", generated_sliding_window);
  if (opt.arch == model_arch::gemma2) {
    w.set(a + ".attn_logit_softcapping", 50.0f);
    w.set(a + ".final_logit_softcapping", 30.0f);
  }
}

void set_hparams(const make_options& opt, gguf::writer& w) {
  const auto& p = opt.preset;
  const std::string a = to_string(opt.arch);
  w.set("general.architecture", a);
  // llama.cpp (and read_vocab) give Phi-3's special tokens their rstrip when the name says phi3;
  // Phi-4-mini's name does not.
  const char* family = opt.arch == model_arch::phi3 ? (opt.phi4_mini_vocab ? "phi4-mini-" : "phi3-") : "";
  const std::string named = is_gemma(opt.arch) ? a + "-" : std::string(family);
  w.set("general.name", "hearth-" + named + p.name);
  w.set("general.description", "Generated by Hearth: random weights, seed " + std::to_string(opt.seed));
  // llama.cpp's LLAMA_FTYPE number. A file of only q8_K or iq4_nl (tests) has no preset here and
  // goes without: llama.cpp's loader then guesses it from the commonest type.
  const auto ft = opt.mix ? opt.mix : file_type_of(opt.dtype);
  if (ft) w.set("general.file_type", static_cast<uint32_t>(*ft));
  const tensor_type base = ft ? base_type(*ft) : opt.dtype;
  if (traits_of(base).block_size > 1) w.set("general.quantization_version", uint32_t{2});  // GGML_QNT_VERSION
  w.set(a + ".context_length", opt.n_ctx);
  w.set(a + ".embedding_length", p.n_embd);
  w.set(a + ".block_count", p.n_layer);
  w.set(a + ".feed_forward_length", p.n_ff);
  w.set(a + ".rope.dimension_count", p.n_embd / p.n_head);
  w.set(a + ".attention.head_count", p.n_head);
  w.set(a + ".attention.head_count_kv", p.n_head_kv);
  w.set(a + ".attention.layer_norm_rms_epsilon", is_gemma(opt.arch) ? 1e-6f : 1e-5f);
  // Gemma 3's global layers rotate at 1e6 (its sliding ones at 10000, which no key holds).
  w.set(a + ".rope.freq_base", opt.arch == model_arch::gemma3 ? 1e6f : 10000.0f);
  w.set(a + ".vocab_size", p.n_vocab);
  if (is_gemma(opt.arch)) set_gemma_hparams(opt, w);
  if (opt.arch == model_arch::qwen3) {
    // What Qwen 3's converter writes from config.json's head_dim (which may differ from width / heads).
    w.set(a + ".attention.key_length", p.n_embd / p.n_head);
    w.set(a + ".attention.value_length", p.n_embd / p.n_head);
  }
  if (opt.arch == model_arch::phi3) {
    // Phi-3's converter writes both always; a sliding window of 0 means none (Phi-4's case), and
    // llama.cpp refuses a phi3 file without the key unless its shape names a known model.
    w.set(a + ".rope.scaling.original_context_length", opt.n_ctx);
    w.set(a + ".attention.sliding_window", uint32_t{0});
  }
}

}  // namespace

std::span<const model_preset> model_presets() { return presets; }

tensor_type matrix_type(const make_options& opt, std::string_view name, uint64_t ne0) {
  if (!opt.mix) return opt.dtype;
  const auto& p = opt.preset;
  const mix_model m{p.n_layer, p.n_head_kv != 0 ? p.n_head / p.n_head_kv : 1, !tied(opt)};
  return tensor_type_for(*opt.mix, name, ne0, m);
}

const model_preset* find_preset(std::string_view name) {
  for (const auto& p : presets) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

status<> validate(const make_options& opt) {
  const auto& p = opt.preset;
  auto bad = [](std::string m) { return error{errc::invalid_argument, "model make: " + std::move(m)}; };
  if (p.n_head == 0 || p.n_head_kv == 0 || p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0) {
    return bad("heads must divide the width and KV heads the heads");
  }
  if ((p.n_embd / p.n_head) % 2 != 0) return bad("head dimension must be even for RoPE");
  // Rows are n_embd long (ffn_down: n_ff). A mix's fallbacks are 32-element types, so its
  // files need rows of whole 32-element blocks, as llama-quantize does.
  const uint32_t block = opt.mix ? (traits_of(base_type(*opt.mix)).block_size > 1 ? 32u : 1u)
                                 : traits_of(opt.dtype).block_size;
  if (p.n_embd % block != 0 || p.n_ff % block != 0) {
    return bad(std::string("dimensions must be multiples of ") + std::to_string(block) + " for " +
               (opt.mix ? to_string(*opt.mix) : traits_of(opt.dtype).name));
  }
  if (opt.n_ctx < 16 || opt.n_ctx > (1u << 20)) return bad("context length must be in [16, 1048576]");
  if (p.n_layer < 1 || p.n_layer > 1024) return bad("layers must be in [1, 1024]");
  if (p.n_vocab < 512) return bad("vocabulary must have at least 512 tokens");
  // llama.cpp's phi3 loader requires output.weight (Phi-4-mini's tied head came later).
  if (opt.arch == model_arch::phi3 && opt.tie_output) return bad("phi3 models have an output.weight: no tied head");
  if (opt.phi4_mini_vocab && opt.arch != model_arch::phi3)
    return bad("Phi-4-mini's tokenizer goes with --arch phi3");
  const bool qwen = opt.arch == model_arch::qwen2 || opt.arch == model_arch::qwen3;
  if (opt.chat == chat_format::llama31 &&
      (opt.arch != model_arch::llama || opt.tokenizer != tokenizer_kind::bpe))
    return bad("the llama3.1 chat template goes with --arch llama and the bpe tokenizer");
  if (opt.chat == chat_format::qwen25 && !qwen)
    return bad("the qwen2.5 chat template goes with --arch qwen2 or qwen3");
  if (opt.chat && opt.chat != chat_format::llama31 && opt.chat != chat_format::qwen25)
    return bad("a generated model's chat template is its family's own, or llama3.1 or qwen2.5");
  return {};
}

vocab_spec make_vocab(const make_options& opt) {
  // Qwen has one tokenizer (byte-level BPE), the phi3 architecture two (Phi-3's Llama 2 pieces,
  // Phi-4-mini's byte-level BPE), each with its own special tokens and template; a llama model
  // takes the one asked for.
  if (opt.arch == model_arch::qwen2 || opt.arch == model_arch::qwen3) return make_qwen_vocab(opt.seed, opt.preset.n_vocab);
  if (opt.arch == model_arch::phi3) {
    return opt.phi4_mini_vocab ? make_phi4_mini_vocab(opt.seed, opt.preset.n_vocab)
                               : make_phi3_vocab(opt.seed, opt.preset.n_vocab);
  }
  if (is_gemma(opt.arch)) return make_gemma_vocab(opt.seed, opt.preset.n_vocab);
  return opt.tokenizer == tokenizer_kind::bpe ? make_bpe_vocab(opt.seed, opt.preset.n_vocab)
                                              : make_spm_vocab(opt.seed, opt.preset.n_vocab);
}

gguf::writer model_writer(const make_options& opt) {
  vocab_spec v = make_vocab(opt);
  if (opt.chat) v.chat_template = chat_template_text(*opt.chat);
  return model_writer(opt, v);
}

gguf::writer model_writer(const make_options& opt, const vocab_spec& vocab) {
  assert(vocab.tokens.size() == opt.preset.n_vocab && "model_writer: vocabulary of another size");
  gguf::writer w;
  set_hparams(opt, w);
  write_vocab(vocab, w);
  for (auto& r : recipes(opt)) {
    auto name = r.name;
    auto dims = r.dims;
    const auto type = r.type;
    w.add_tensor(std::move(name), type, std::move(dims), filler(std::move(r)));
  }
  return w;
}

status<> make_model(const make_options& opt, const std::string& path,
                    const gguf::writer::progress_fn& progress) {
  if (auto s = validate(opt); !s) return s;
  return model_writer(opt).write(path, progress);
}

}  // namespace hearth
