#pragma once
// The tensors of a Llama-family model: GGUF names and shapes, in file order. The one list that
// the generated-model writer, the weight loaders and the tests share.

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "model/hparams.hpp"

namespace hearth {

namespace gguf {
class file;
struct tensor_info;
}  // namespace gguf

//! `output` stays last: tables indexed by kind are sized by it.
enum class weight_kind {
  token_embd,
  attn_norm,
  attn_q,
  attn_k,
  attn_v,
  attn_q_bias,
  attn_k_bias,
  attn_v_bias,
  attn_output,
  ffn_norm,
  ffn_gate,
  ffn_up,
  ffn_down,
  attn_qkv,        //!< phi3: [q; k; v] in one matrix (q_dim + 2 kv_dim rows)
  attn_q_norm,     //!< qwen3: RMS norm weight (head_dim,) shared by every q head
  attn_k_norm,     //!< qwen3: the same for k heads
  ffn_gate_up,     //!< phi3: [gate; up] (2 n_ff rows), stored under the name ffn_up
  attn_post_norm,  //!< gemma: RMS norm weight (n_embd,) of the attention's output, before the residual add
  ffn_post_norm,   //!< gemma: the same for the FFN's output (post_ffw_norm)
  output_norm,
  output,
};

struct weight_desc {
  weight_kind kind;
  uint32_t layer;              //!< the block index for blk.N tensors, else 0
  std::string name;            //!< e.g. "blk.3.attn_q.weight"
  std::vector<uint64_t> dims;  //!< GGUF order, fastest first: a matrix (out, in) is {in, out}
};

//! Every tensor the model has: biases only with hp.has_qkv_bias, output only when not tied,
//! q/k norms with hp.has_qk_norm, fused matrices in place of the split ones with hp.fused_*,
//! post-norms with hp.has_post_norms.
//! Names and shapes as llama.cpp's converter writes them.
std::vector<weight_desc> llama_weights(const hparams& hp);

//! The tensor `d` describes, with exactly its dims; errc::malformed naming it otherwise.
result<const gguf::tensor_info*> find_weight(const gguf::file& f, const weight_desc& d);

}  // namespace hearth
