#pragma once
// Deterministic generated models: Llama-family GGUF files (llama, qwen2, qwen3, phi3, gemma2, gemma3) with
// random weights and a real vocabulary learned from generated text, so Hearth runs on a fresh machine with no
// download. Same options -> byte-identical file.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/hparams.hpp"
#include "model/quant_mix.hpp"
#include "model/tensor_types.hpp"
#include "model/vocab.hpp"

namespace hearth {

struct model_preset {
  const char* name;
  uint32_t n_embd;
  uint32_t n_layer;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t n_ff;
  uint32_t n_vocab;
};

//! tiny (dim 288, 6 layers), small (dim 768, 12 layers), 1b (TinyLlama-1.1B shape).
std::span<const model_preset> model_presets();
const model_preset* find_preset(std::string_view name);

//! `<arch>.attention.sliding_window` of generated gemma2 / gemma3 files.
inline constexpr uint32_t generated_sliding_window = 32;

struct make_options {
  model_preset preset;
  tensor_type dtype = tensor_type::f32;  //!< of the 2-D weights; norms stay f32 as llama.cpp keeps them
  uint64_t seed = 1;
  tokenizer_kind tokenizer = tokenizer_kind::bpe;
  uint32_t n_ctx = 2048;
  //! qwen2: "qwen2.*" keys, Q/K/V biases, half-split RoPE; qwen3: q/k norms instead of biases;
  //! phi3: fused attn_qkv and gate/up; gemma2/gemma3: post-norms, GeGLU, sliding layers, a tied
  //! head (tie_output is implied). Qwen, Phi-3 and Gemma models get their family's vocabulary (make_vocab).
  model_arch arch = model_arch::llama;
  bool phi4_mini_vocab = false;  //!< phi3 only: Phi-4-mini's tokenizer (pre "gpt-4o") instead of Phi-3's
  bool tie_output = false;              //!< no output.weight: the head reuses the embedding (as SmolLM)
  //! A llama-quantize preset (q4_k_m, ...): each matrix gets the type its rules give (and
  //! dtype is not used); general.file_type records it. Without one, every matrix is dtype.
  std::optional<file_type> mix = std::nullopt;
  //! Another chat family's template than the vocabulary's own: llama3.1 for a llama model's
  //! byte-level BPE, qwen2.5 for a Qwen model (the templates with tools, chat_tools.hpp).
  std::optional<chat_format> chat = std::nullopt;
};

//! The type each matrix of the model gets: mix's rules, or dtype.
tensor_type matrix_type(const make_options& opt, std::string_view name, uint64_t ne0);

//! Checks the options (every matrix's rows are whole blocks of its type, heads divide the width).
status<> validate(const make_options& opt);
//! A writer holding the whole model; tensor data is generated while the file is written.
//! Requires validate(opt) to have passed.
gguf::writer model_writer(const make_options& opt);
//! The same with a vocabulary built beforehand (tests build many models over one vocabulary);
//! vocab must have opt.preset.n_vocab tokens.
gguf::writer model_writer(const make_options& opt, const vocab_spec& vocab);
//! The vocabulary model_writer(opt) builds.
vocab_spec make_vocab(const make_options& opt);
//! validate + model_writer + write (`progress`: gguf::writer::write's).
status<> make_model(const make_options& opt, const std::string& path,
                    const gguf::writer::progress_fn& progress = {});

}  // namespace hearth
