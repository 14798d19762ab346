#include "kernels/cuda/cuda_weights.hpp"

#include <cstring>
#include <span>
#include <string>

#include "kernels/reference_ops.hpp"
#include "model/tensor_types.hpp"

namespace hearth::cuda {
namespace {

// Copies host bytes into a new device buffer; `bytes` counts what the device holds.
result<device_buffer> upload(std::span<const std::byte> host, const std::string& what, size_t& bytes) {
  auto d = device_buffer::create(host.size(), what);
  if (!d) return d.error();
  if (auto st =
          check(cudaMemcpy(d->get(), host.data(), host.size(), cudaMemcpyHostToDevice), "uploading " + what);
      !st)
    return st.error();
  bytes += host.size();
  return d;
}

result<device_buffer> upload_floats(const std::vector<float>& v, const std::string& what, size_t& bytes) {
  return upload(std::as_bytes(std::span(v)), what, bytes);
}

// Matrices in the compute type: f32 as dequantized, or bf16 rounded to nearest even.
result<device_buffer> upload_matrix(const std::vector<float>& v, act_type type, const std::string& what,
                                    size_t& bytes) {
  if (type == act_type::f32) return upload_floats(v, what, bytes);
  std::vector<uint16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = fp32_to_bf16(v[i]);
  return upload(std::as_bytes(std::span(b)), what, bytes);
}

// Parts stacked row-wise ([q; k; v], [gate; up]) with their biases, as one linear.
result<device_linear> upload_linear(const tensor_index& ix, std::span<const weight_kind> kinds,
                                    std::span<const weight_kind> biases, uint32_t layer, act_type type,
                                    size_t& bytes) {
  device_linear out;
  std::vector<float> w, b;
  for (weight_kind k : kinds) {
    const gguf::tensor_info* t = ix.get(k, layer);
    out.n_in = static_cast<uint32_t>(t->dims[0]);
    out.n_out += static_cast<uint32_t>(t->dims[1]);
    const auto part = ix.floats(k, layer);
    w.insert(w.end(), part.begin(), part.end());
  }
  for (weight_kind k : biases) {
    const auto part = ix.floats(k, layer);
    b.insert(b.end(), part.begin(), part.end());
  }
  const std::string name = ix.get(kinds[0], layer)->name;
  auto dw = upload_matrix(w, type, name, bytes);
  if (!dw) return dw.error();
  out.w = std::move(*dw);
  if (!b.empty()) {
    auto db = upload_floats(b, name + "'s bias", bytes);
    if (!db) return db.error();
    out.bias = std::move(*db);
  }
  return out;
}

struct upload_step {
  device_buffer* to;
  weight_kind kind;
};

result<device_layer> upload_layer(const tensor_index& ix, const hparams& hp, uint32_t l, act_type type,
                                  size_t& bytes) {
  using wk = weight_kind;
  device_layer out;
  const std::vector<wk> qkv =
      hp.fused_qkv ? std::vector{wk::attn_qkv} : std::vector{wk::attn_q, wk::attn_k, wk::attn_v};
  const std::vector<wk> gu =
      hp.fused_gate_up ? std::vector{wk::ffn_gate_up} : std::vector{wk::ffn_gate, wk::ffn_up};
  const std::vector<wk> biases =
      hp.has_qkv_bias ? std::vector{wk::attn_q_bias, wk::attn_k_bias, wk::attn_v_bias} : std::vector<wk>{};
  const std::pair<device_linear*, std::vector<wk>> linears[] = {
      {&out.qkv, qkv}, {&out.wo, {wk::attn_output}}, {&out.gate_up, gu}, {&out.down, {wk::ffn_down}}};
  for (const auto& [to, kinds] : linears) {
    auto lin = upload_linear(ix, kinds, to == &out.qkv ? std::span<const wk>(biases) : std::span<const wk>{},
                             l, type, bytes);
    if (!lin) return lin.error();
    *to = std::move(*lin);
  }
  std::vector<upload_step> norms = {{&out.attn_norm, wk::attn_norm}, {&out.ffn_norm, wk::ffn_norm}};
  if (hp.has_qk_norm)
    norms.insert(norms.end(), {{&out.q_norm, wk::attn_q_norm}, {&out.k_norm, wk::attn_k_norm}});
  if (hp.has_post_norms) {
    norms.insert(norms.end(),
                 {{&out.attn_post_norm, wk::attn_post_norm}, {&out.ffn_post_norm, wk::ffn_post_norm}});
  }
  for (const upload_step& n : norms) {
    auto d = upload_floats(ix.floats(n.kind, l), ix.get(n.kind, l)->name, bytes);
    if (!d) return d.error();
    *n.to = std::move(*d);
  }
  return out;
}

// One table of frequencies per distinct RoPE among the layers (gemma3's sliding layers have their own).
status<> upload_ropes(const hparams& hp, device_weights& w) {
  std::vector<hparams::layer_rope> made;
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    const hparams::layer_rope rp = hp.rope_of(l);
    uint32_t i = 0;
    while (i < made.size() &&
           !(made[i].base == rp.base && made[i].freq_factors.data() == rp.freq_factors.data() &&
             made[i].freq_factors.size() == rp.freq_factors.size()))
      ++i;
    w.layers[l].rope = i;
    if (i < made.size()) continue;
    made.push_back(rp);
    std::vector<double> f(hp.n_rot / 2);
    for (uint32_t p = 0; p < f.size(); ++p) f[p] = ref::rope_freq(p, hp.n_rot, rp.base, rp.freq_factors);
    auto d = upload(std::as_bytes(std::span(f)), "RoPE frequencies", w.bytes);
    if (!d) return d.error();
    w.rope_freqs.push_back(std::move(*d));
  }
  return {};
}

}  // namespace

void host_embedding::row(token_id t, float scale, std::span<float> out) const {
  const size_t row_bytes = *bytes_for(type, out.size());
  dequantize(type, rows.subspan(static_cast<size_t>(t) * row_bytes, row_bytes), out);
  if (scale != 1.0f) {
    for (float& v : out) v *= scale;  // gemma: sqrt(n_embd)
  }
}

result<device_weights> upload_weights(const tensor_index& ix, const hparams& hp, act_type type,
                                      const std::function<void(uint64_t, uint64_t)>& progress) {
  device_weights w;
  w.type = type;
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    auto layer = upload_layer(ix, hp, l, type, w.bytes);
    if (!layer) return layer.error();
    w.layers.push_back(std::move(*layer));
    if (progress) progress(l + 1, hp.n_layer + 1);
  }
  if (auto st = upload_ropes(hp, w); !st) return st.error();
  w.embd.type = ix.get(weight_kind::token_embd)->type;
  w.embd.rows = ix.data(weight_kind::token_embd);
  w.embd.file = ix.file().keep_alive();
  if (!w.embd.file) {
    w.embd.copy.assign(w.embd.rows.begin(), w.embd.rows.end());
    w.embd.rows = w.embd.copy;
  }
  auto norm = upload_floats(ix.floats(weight_kind::output_norm), "output_norm.weight", w.bytes);
  if (!norm) return norm.error();
  w.output_norm = std::move(*norm);
  const weight_kind head[] = {hp.tied_output ? weight_kind::token_embd : weight_kind::output};
  auto h = upload_linear(ix, head, {}, 0, type, w.bytes);
  if (!h) return h.error();
  w.head = std::move(*h);
  if (progress) progress(hp.n_layer + 1, hp.n_layer + 1);
  return w;
}

}  // namespace hearth::cuda
