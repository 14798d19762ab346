#pragma once
// Every weight of a Llama-family model, dequantized to f32, for the reference forward pass.
// Matrices are row-major [out][in] as PyTorch holds them; GGUF stores them with ne = {in, out},
// which is the same bytes, so a tensor's data dequantizes straight into place.

#include <cassert>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "model/hparams.hpp"
#include "model/llama_weights.hpp"

namespace hearth {

namespace gguf {
class file;
}

//! One transformer block. q_dim = n_head * head_dim, kv_dim = n_embd_kv().
struct reference_layer {
  std::vector<float> attn_norm;  // (n_embd,)
  std::vector<float> wq;         // (q_dim, n_embd)
  std::vector<float> wk;         // (kv_dim, n_embd)
  std::vector<float> wv;         // (kv_dim, n_embd)
  std::vector<float> wo;         // (n_embd, q_dim)
  std::vector<float> bq;         // (q_dim,)  only with has_qkv_bias, else empty
  std::vector<float> bk;         // (kv_dim,) only with has_qkv_bias, else empty
  std::vector<float> bv;         // (kv_dim,) only with has_qkv_bias, else empty
  std::vector<float> ffn_norm;   // (n_embd,)
  std::vector<float> w_gate;     // (n_ff, n_embd)
  std::vector<float> w_up;       // (n_ff, n_embd)
  std::vector<float> w_down;     // (n_embd, n_ff)
  // What the families beyond llama add; empty otherwise.
  std::vector<float> q_norm;          // (head_dim,) qwen3
  std::vector<float> k_norm;          // (head_dim,) qwen3
  std::vector<float> wqkv;            // (q_dim + 2 kv_dim, n_embd) [wq; wk; wv]: phi3, instead of wq, wk, wv
  std::vector<float> w_gate_up;       // (2 n_ff, n_embd) [w_gate; w_up]: phi3, instead of w_gate, w_up
  std::vector<float> attn_post_norm;  // (n_embd,) gemma: on the attention's output
  std::vector<float> ffn_post_norm;   // (n_embd,) gemma: on the FFN's output
};

struct reference_weights {
  std::vector<float> token_embd;        // (n_vocab, n_embd)
  std::vector<reference_layer> layers;  // n_layer
  std::vector<float> output_norm;       // (n_embd,)
  std::vector<float> output;            // (n_vocab, n_embd); empty when hp.tied_output

  //! The LM head (n_vocab, n_embd): `output`, or `token_embd` when the model ties them.
  std::span<const float> head() const { return output.empty() ? token_embd : output; }
};

//! The vector holding the tensor `d` describes (W: reference_weights, const or not).
template <class W>
auto& slot(W& w, const weight_desc& d) {
  auto& l = w.layers[d.layer];
  switch (d.kind) {
    case weight_kind::token_embd:
      return w.token_embd;
    case weight_kind::attn_norm:
      return l.attn_norm;
    case weight_kind::attn_q:
      return l.wq;
    case weight_kind::attn_k:
      return l.wk;
    case weight_kind::attn_v:
      return l.wv;
    case weight_kind::attn_q_bias:
      return l.bq;
    case weight_kind::attn_k_bias:
      return l.bk;
    case weight_kind::attn_v_bias:
      return l.bv;
    case weight_kind::attn_output:
      return l.wo;
    case weight_kind::ffn_norm:
      return l.ffn_norm;
    case weight_kind::ffn_gate:
      return l.w_gate;
    case weight_kind::ffn_up:
      return l.w_up;
    case weight_kind::ffn_down:
      return l.w_down;
    case weight_kind::attn_qkv:
      return l.wqkv;
    case weight_kind::attn_q_norm:
      return l.q_norm;
    case weight_kind::attn_k_norm:
      return l.k_norm;
    case weight_kind::ffn_gate_up:
      return l.w_gate_up;
    case weight_kind::attn_post_norm:
      return l.attn_post_norm;
    case weight_kind::ffn_post_norm:
      return l.ffn_post_norm;
    case weight_kind::output_norm:
      return w.output_norm;
    case weight_kind::output:
      return w.output;
  }
  return w.output;  // unreachable: every kind is listed
}

//! Calls f(gguf_name, dims, data) for every tensor the model has, in file order; dims as GGUF
//! lists them (fastest-varying first: a matrix is {in, out}). W is `reference_weights` or its
//! const; w.layers must already hold hp.n_layer layers.
template <class W, class F>
void for_each_weight(const hparams& hp, W& w, F&& f) {
  assert(w.layers.size() == hp.n_layer && "for_each_weight: layers not sized");
  for (const weight_desc& d : llama_weights(hp)) f(d.name, d.dims, slot(w, d));
}

//! Checks that every tensor for_each_weight names has exactly its size (and that a tied model has
//! no separate output); errc::invalid_argument naming the first tensor that does not.
status<> check_weights(const hparams& hp, const reference_weights& w);

//! Finds every tensor in `f`, checks its exact dims and dequantizes it; errc::malformed naming
//! the tensor that is missing or of the wrong shape. (In reference_weights_load.cpp, so that
//! users of the rest need not link the GGUF reader.)
result<reference_weights> load_reference_weights(const gguf::file& f, const hparams& hp);

}  // namespace hearth
