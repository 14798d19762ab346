#include "model/llama_weights.hpp"

#include "model/gguf.hpp"

namespace hearth {
namespace {

std::string dims_string(const std::vector<uint64_t>& dims) {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "}";
}

}  // namespace

std::vector<weight_desc> llama_weights(const hparams& hp) {
  const uint64_t embd = hp.n_embd, q_dim = uint64_t{hp.n_head} * hp.head_dim;
  const uint64_t kv_dim = hp.n_embd_kv(), ff = hp.n_ff, vocab = hp.n_vocab;
  std::vector<weight_desc> w;
  w.push_back({weight_kind::token_embd, 0, "token_embd.weight", {embd, vocab}});
  for (uint32_t i = 0; i < hp.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    w.push_back({weight_kind::attn_norm, i, p + "attn_norm.weight", {embd}});
    if (hp.fused_qkv) {
      w.push_back({weight_kind::attn_qkv, i, p + "attn_qkv.weight", {embd, q_dim + 2 * kv_dim}});
    } else {
      w.push_back({weight_kind::attn_q, i, p + "attn_q.weight", {embd, q_dim}});
      w.push_back({weight_kind::attn_k, i, p + "attn_k.weight", {embd, kv_dim}});
      w.push_back({weight_kind::attn_v, i, p + "attn_v.weight", {embd, kv_dim}});
    }
    if (hp.has_qkv_bias) {
      w.push_back({weight_kind::attn_q_bias, i, p + "attn_q.bias", {q_dim}});
      w.push_back({weight_kind::attn_k_bias, i, p + "attn_k.bias", {kv_dim}});
      w.push_back({weight_kind::attn_v_bias, i, p + "attn_v.bias", {kv_dim}});
    }
    if (hp.has_qk_norm) {
      w.push_back({weight_kind::attn_q_norm, i, p + "attn_q_norm.weight", {hp.head_dim}});
      w.push_back({weight_kind::attn_k_norm, i, p + "attn_k_norm.weight", {hp.head_dim}});
    }
    w.push_back({weight_kind::attn_output, i, p + "attn_output.weight", {q_dim, embd}});
    if (hp.has_post_norms)
      w.push_back({weight_kind::attn_post_norm, i, p + "post_attention_norm.weight", {embd}});
    w.push_back({weight_kind::ffn_norm, i, p + "ffn_norm.weight", {embd}});
    if (hp.fused_gate_up) {
      w.push_back({weight_kind::ffn_gate_up, i, p + "ffn_up.weight", {embd, 2 * ff}});
    } else {
      w.push_back({weight_kind::ffn_gate, i, p + "ffn_gate.weight", {embd, ff}});
      w.push_back({weight_kind::ffn_up, i, p + "ffn_up.weight", {embd, ff}});
    }
    w.push_back({weight_kind::ffn_down, i, p + "ffn_down.weight", {ff, embd}});
    if (hp.has_post_norms) w.push_back({weight_kind::ffn_post_norm, i, p + "post_ffw_norm.weight", {embd}});
  }
  w.push_back({weight_kind::output_norm, 0, "output_norm.weight", {embd}});
  if (!hp.tied_output) w.push_back({weight_kind::output, 0, "output.weight", {embd, vocab}});
  return w;
}

result<const gguf::tensor_info*> find_weight(const gguf::file& f, const weight_desc& d) {
  const gguf::tensor_info* t = f.find_tensor(d.name);
  if (t == nullptr) return error{errc::malformed, "model: tensor " + d.name + " is missing"};
  if (t->dims != d.dims) {
    return error{errc::malformed, "model: tensor " + d.name + " has dims " + dims_string(t->dims) +
                                      ", expected " + dims_string(d.dims)};
  }
  return t;
}

}  // namespace hearth
