#pragma once
// The reference forward pass: one token at a time, one sequence, straight loops (llama2.c's run.c
// with llama.cpp's semantics for Llama, Qwen 2/3, Phi-3 and Gemma 2/3). Slow and plain on purpose: it is the
// twin every fast kernel is tested against, and what `hearth generate` runs until a faster backend exists.
//
// Per token:  x = token_embd[token]  [gemma: * sqrt(n_embd)]
//   per layer: h = rmsnorm(x) * attn_norm;  q,k,v = W h (+ b);  [qwen3, gemma3: rmsnorm each q, k head]
//              RoPE(q, k);  cache k, v at pos
//              x += wo · attention(q, cached k/v over 0..pos, or the layer's window)
//                   [gemma: scores soft-capped; the sum rmsnorm-ed by post_attention_norm]
//              h = rmsnorm(x) * ffn_norm;   x += w_down · (act(w_gate h) * (w_up h))
//                   [act silu, gemma's gelu; gemma: the sum rmsnorm-ed by post_ffw_norm]
//   logits = head · (rmsnorm(x) * output_norm)  [gemma2: soft-capped]

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.hpp"
#include "kernels/reference_weights.hpp"
#include "model/hparams.hpp"
#include "model/vocab.hpp"

namespace hearth {

class reference_model {
 public:
  //! Checks hp (head counts, n_rot, ...) and the weights' sizes; the KV cache holds n_ctx
  //! positions. errc::invalid_argument naming what is wrong.
  static result<reference_model> create(hparams hp, reference_weights w, uint32_t n_ctx);

  //! Logits (n_vocab,) of the token after `token` at `pos`, valid until the next call. The cache
  //! must hold positions 0..pos-1 (pos <= n_past()); later positions are forgotten. Empty, with
  //! nothing changed, when token is outside the vocabulary, pos > n_past() or pos >= n_ctx().
  std::span<const float> forward(token_id token, uint32_t pos);
  //! forward() over tokens at start_pos, start_pos + 1, ...: one logits row per token (prefill).
  //! Empty, with nothing changed, when any token or position is out of range as for forward().
  std::vector<std::vector<float>> forward_all(std::span<const token_id> tokens, uint32_t start_pos);
  //! Forgets the sequence: n_past() becomes 0.
  void reset() { n_past_ = 0; }

  const hparams& params() const { return hp_; }
  uint32_t n_ctx() const { return n_ctx_; }
  //! Positions the KV cache holds (0..n_past()-1).
  uint32_t n_past() const { return n_past_; }

 private:
  reference_model(hparams hp, reference_weights w, uint32_t n_ctx);
  void attention_block(uint32_t layer, uint32_t pos);
  void attend(uint32_t layer, uint32_t pos);
  void ffn_block(uint32_t layer);
  float* key_at(uint32_t layer, uint32_t pos);
  float* value_at(uint32_t layer, uint32_t pos);

  hparams hp_;
  reference_weights w_;
  uint32_t n_ctx_;
  uint32_t n_past_ = 0;
  uint32_t q_dim_;   // n_head * head_dim
  uint32_t kv_dim_;  // n_head_kv * head_dim

  std::vector<float> key_cache_;    // (layer, n_ctx, kv_dim)
  std::vector<float> value_cache_;  // (layer, n_ctx, kv_dim)

  // Activations of the current token.
  std::vector<float> x_;        // (n_embd,) residual stream
  std::vector<float> xb_;       // (n_embd,) normed x, then a block's output
  std::vector<float> q_;        // (q_dim,)
  std::vector<float> att_out_;  // (q_dim,) attention output of all heads
  std::vector<float> scores_;   // (n_ctx,) one head's attention weights over positions
  std::vector<float> hb_;       // (n_ff,) gate, then silu(gate) * up
  std::vector<float> hb2_;      // (n_ff,) up
  std::vector<float> fused_;    // (max(q_dim + 2 kv_dim, 2 n_ff),) a fused projection before its split; phi3
  std::vector<float> logits_;   // (n_vocab,)
};

}  // namespace hearth
