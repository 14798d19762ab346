#pragma once
// Hyper-parameters of a Llama-family model, read from the standard GGUF keys
// (`<arch>.context_length`, `<arch>.embedding_length`, ...). Supported architectures:
// `llama` (Llama 2/3, Mistral, TinyLlama, SmolLM), `qwen2` (Q/K/V biases), `qwen3` (q/k norms),
// `phi3` (fused linears), `gemma2` and `gemma3` (GeGLU, post-norms, soft-capping, sliding layers).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace hearth {

namespace gguf {
class file;
}

enum class model_arch { llama, qwen2, qwen3, phi3, gemma2, gemma3 };
//! The FFN's gate activation: silu (SwiGLU) or gelu with the tanh approximation (Gemma's GeGLU).
enum class ffn_activation { silu, gelu };
//! How RoPE pairs dimensions: llama.cpp rotates adjacent pairs for `llama` (its converter
//! permutes Q/K rows) and the two halves of each head for `qwen2`, `qwen3` and `phi3` ("neox").
enum class rope_pairing { adjacent, halves };

struct hparams {
  model_arch arch = model_arch::llama;
  std::string name;  //!< general.name, may be empty
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;  //!< context length the model was trained for
  uint32_t n_embd = 0;       //!< model dimension
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;  //!< < n_head for GQA
  uint32_t n_ff = 0;       //!< SwiGLU hidden size
  uint32_t head_dim = 0;   //!< n_embd / n_head unless the file says otherwise
  uint32_t n_rot = 0;      //!< rope.dimension_count (usually head_dim)
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  rope_pairing pairing = rope_pairing::adjacent;
  //! n_rot/2 divisors of the RoPE frequencies, empty when none: theta_i = pos * base^(-2i/n_rot) / f[i].
  //! From the `rope_freqs.weight` tensor (how llama.cpp stores Llama 3.1 scaling), or computed from
  //! `rope.scaling.type` = "llama3" / "linear" keys.
  std::vector<float> rope_freq_factors;
  //! Multiplies every cos and sin of the rotation (ggml's attn_factor): LongRoPE's
  //! sqrt(1 + ln(ctx / orig_ctx) / ln(orig_ctx)) from `rope.scaling.attn_factor`, else 1.
  float rope_attn_factor = 1.0f;
  bool has_qkv_bias = false;   //!< qwen2
  bool has_qk_norm = false;    //!< qwen3: attn_q_norm / attn_k_norm (head_dim,) on each head
  bool fused_qkv = false;      //!< phi3: one attn_qkv (q + 2 kv rows) instead of attn_q/k/v
  bool fused_gate_up = false;  //!< phi3: ffn_up holds [gate; up] (2 n_ff rows), no ffn_gate
  bool tied_output = false;    //!< no output.weight: the head reuses token_embd

  // Gemma 2 and 3 (llama.cpp's build_gemma2 / llm_build_gemma3); the defaults leave them out.
  ffn_activation act = ffn_activation::silu;
  float embd_scale = 1.0f;      //!< token embeddings are multiplied by it (gemma: sqrt(n_embd))
  float attn_scale = 0.0f;      //!< multiplies q.k before the softmax; 0: 1 / sqrt(head_dim)
  float attn_softcap = 0.0f;    //!< gemma2: scores c * tanh(scores / c) before the softmax; 0: none
  float final_softcap = 0.0f;   //!< gemma2: logits c * tanh(logits / c); 0: none
  bool has_post_norms = false;  //!< post_attention_norm and post_ffw_norm on each block's output
  //! Sliding-window layers: a query at position p sees keys at p - n_swa < t <= p (llama.cpp
  //! masks p - t >= n_swa). Layer l slides when l % swa_pattern < swa_pattern - 1: gemma2's even
  //! layers (pattern 2), five of every six in gemma3 (pattern 6). 0: no layer slides.
  uint32_t n_swa = 0;
  uint32_t swa_pattern = 0;
  //! gemma3: the sliding layers' RoPE base (10000), without rope_freq_factors; 0: as every layer.
  float rope_freq_base_swa = 0.0f;

  uint32_t n_embd_kv() const { return n_head_kv * head_dim; }
  float kq_scale() const;
  bool is_swa(uint32_t layer) const {
    return n_swa > 0 && swa_pattern > 0 && layer % swa_pattern < swa_pattern - 1;
  }
  //! The window of layer `layer`'s attention in positions; 0: the whole context.
  uint32_t window(uint32_t layer) const { return is_swa(layer) ? n_swa : 0; }

  //! The RoPE base and frequency divisors of one layer.
  struct layer_rope {
    float base;
    std::span<const float> freq_factors;
  };
  layer_rope rope_of(uint32_t layer) const;
};

const char* to_string(model_arch a);

//! Reads and validates (divisibility, ranges, tensor shapes); "unsupported architecture" for others.
result<hparams> read_hparams(const gguf::file& f);

}  // namespace hearth
