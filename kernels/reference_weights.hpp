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
};

struct reference_weights {
  std::vector<float> token_embd;   // (n_vocab, n_embd)
  std::vector<reference_layer> layers;  // n_layer
  std::vector<float> output_norm;  // (n_embd,)
  std::vector<float> output;       // (n_vocab, n_embd); empty when hp.tied_output

  //! The LM head (n_vocab, n_embd): `output`, or `token_embd` when the model ties them.
  std::span<const float> head() const { return output.empty() ? token_embd : output; }
};

//! Calls f(gguf_name, dims, data) for every tensor the model has, in file order; dims as GGUF
//! lists them (fastest-varying first: a matrix is {in, out}). W is `reference_weights` or its
//! const; w.layers must already hold hp.n_layer layers.
template <class W, class F>
void for_each_weight(const hparams& hp, W& w, F&& f) {
  assert(w.layers.size() == hp.n_layer && "for_each_weight: layers not sized");
  const uint64_t embd = hp.n_embd, q_dim = uint64_t{hp.n_head} * hp.head_dim;
  const uint64_t kv_dim = hp.n_embd_kv(), ff = hp.n_ff, vocab = hp.n_vocab;
  f(std::string("token_embd.weight"), std::vector<uint64_t>{embd, vocab}, w.token_embd);
  for (uint32_t i = 0; i < hp.n_layer; ++i) {
    auto& l = w.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    f(p + "attn_norm.weight", std::vector<uint64_t>{embd}, l.attn_norm);
    f(p + "attn_q.weight", std::vector<uint64_t>{embd, q_dim}, l.wq);
    f(p + "attn_k.weight", std::vector<uint64_t>{embd, kv_dim}, l.wk);
    f(p + "attn_v.weight", std::vector<uint64_t>{embd, kv_dim}, l.wv);
    if (hp.has_qkv_bias) {
      f(p + "attn_q.bias", std::vector<uint64_t>{q_dim}, l.bq);
      f(p + "attn_k.bias", std::vector<uint64_t>{kv_dim}, l.bk);
      f(p + "attn_v.bias", std::vector<uint64_t>{kv_dim}, l.bv);
    }
    f(p + "attn_output.weight", std::vector<uint64_t>{q_dim, embd}, l.wo);
    f(p + "ffn_norm.weight", std::vector<uint64_t>{embd}, l.ffn_norm);
    f(p + "ffn_gate.weight", std::vector<uint64_t>{embd, ff}, l.w_gate);
    f(p + "ffn_up.weight", std::vector<uint64_t>{embd, ff}, l.w_up);
    f(p + "ffn_down.weight", std::vector<uint64_t>{ff, embd}, l.w_down);
  }
  f(std::string("output_norm.weight"), std::vector<uint64_t>{embd}, w.output_norm);
  if (!hp.tied_output) {
    f(std::string("output.weight"), std::vector<uint64_t>{embd, vocab}, w.output);
  }
}

//! Checks that every tensor for_each_weight names has exactly its size (and that a tied model has
//! no separate output); errc::invalid_argument naming the first tensor that does not.
status<> check_weights(const hparams& hp, const reference_weights& w);

//! Finds every tensor in `f`, checks its exact dims and dequantizes it; errc::malformed naming
//! the tensor that is missing or of the wrong shape. (In reference_weights_load.cpp, so that
//! users of the rest need not link the GGUF reader.)
result<reference_weights> load_reference_weights(const gguf::file& f, const hparams& hp);

}  // namespace hearth
