#include "kernels/reference_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "common/checked.hpp"
#include "kernels/reference_ops.hpp"

namespace hearth {

namespace {

status<> invalid(const std::string& what) {
  return error{errc::invalid_argument, "reference model: " + what};
}

status<> check_hparams(const hparams& hp, uint32_t n_ctx) {
  if (hp.n_vocab == 0 || hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || hp.n_head_kv == 0 ||
      hp.n_ff == 0 || hp.head_dim == 0) {
    return invalid("n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff and head_dim must be > 0");
  }
  if (hp.n_vocab > static_cast<uint32_t>(std::numeric_limits<token_id>::max())) {
    return invalid("n_vocab " + std::to_string(hp.n_vocab) + " does not fit a token id");
  }
  if (uint64_t{hp.n_head} * hp.head_dim > std::numeric_limits<uint32_t>::max()) {
    return invalid("n_head * head_dim does not fit 32 bits");
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return invalid("n_head " + std::to_string(hp.n_head) + " is not a multiple of n_head_kv " +
                   std::to_string(hp.n_head_kv));
  }
  if (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim) {
    return invalid("n_rot " + std::to_string(hp.n_rot) + " must be even and <= head_dim " +
                   std::to_string(hp.head_dim));
  }
  if (!(hp.rms_eps >= 0.0f) || !std::isfinite(hp.rms_eps)) return invalid("rms_eps must be >= 0");
  if (!(hp.rope_freq_base > 0.0f) || !std::isfinite(hp.rope_freq_base)) {
    return invalid("rope_freq_base must be > 0");
  }
  if (!(hp.rope_attn_factor > 0.0f) || !std::isfinite(hp.rope_attn_factor)) {
    return invalid("rope_attn_factor must be > 0");
  }
  if (n_ctx == 0) return invalid("n_ctx must be > 0");
  // Every buffer below is at most the KV cache's or a weight matrix's size; 32-bit products of
  // two u32 fit in u64, the cache's three factors might not.
  auto cache = checked_mul(uint64_t{hp.n_layer} * n_ctx, hp.n_embd_kv());
  if (!cache || *cache > std::numeric_limits<size_t>::max() / sizeof(float)) {
    return invalid("KV cache of " + std::to_string(n_ctx) + " positions is too large");
  }
  if (!hp.rope_freq_factors.empty() && hp.rope_freq_factors.size() != hp.n_rot / 2) {
    return invalid("rope_freq_factors needs n_rot / 2 = " + std::to_string(hp.n_rot / 2) + " entries");
  }
  for (float f : hp.rope_freq_factors) {
    if (!(f > 0.0f) || !std::isfinite(f))
      return invalid("rope frequency factors must be positive and finite");
  }
  return {};
}

// Gemma's scales and caps: 0 means "none" (or the default scale) for all but embd_scale.
status<> check_scales(const hparams& hp) {
  const std::pair<float, const char*> optional[] = {{hp.attn_scale, "attn_scale"},
                                                    {hp.attn_softcap, "attn_softcap"},
                                                    {hp.final_softcap, "final_softcap"},
                                                    {hp.rope_freq_base_swa, "rope_freq_base_swa"}};
  for (const auto& [v, name] : optional) {
    if (!(v >= 0.0f) || !std::isfinite(v)) return invalid(std::string(name) + " must be >= 0 and finite");
  }
  if (!(hp.embd_scale > 0.0f) || !std::isfinite(hp.embd_scale)) return invalid("embd_scale must be > 0");
  return {};
}

}  // namespace

result<reference_model> reference_model::create(hparams hp, reference_weights w, uint32_t n_ctx) {
  if (auto st = check_hparams(hp, n_ctx); !st) return st.error();
  if (auto st = check_scales(hp); !st) return st.error();
  if (auto st = check_weights(hp, w); !st) return st.error();
  return reference_model(std::move(hp), std::move(w), n_ctx);
}

reference_model::reference_model(hparams hp, reference_weights w, uint32_t n_ctx)
    : hp_(std::move(hp)),
      w_(std::move(w)),
      n_ctx_(n_ctx),
      q_dim_(hp_.n_head * hp_.head_dim),
      kv_dim_(hp_.n_embd_kv()),
      key_cache_(size_t{hp_.n_layer} * n_ctx * kv_dim_),
      value_cache_(key_cache_.size()),
      x_(hp_.n_embd),
      xb_(hp_.n_embd),
      q_(q_dim_),
      att_out_(q_dim_),
      scores_(n_ctx),
      hb_(hp_.n_ff),
      hb2_(hp_.n_ff),
      fused_(hp_.fused_qkv || hp_.fused_gate_up
                 ? std::max<size_t>(q_dim_ + 2 * size_t{kv_dim_}, 2 * size_t{hp_.n_ff})
                 : 0),
      logits_(hp_.n_vocab) {}

float* reference_model::key_at(uint32_t layer, uint32_t pos) {
  return key_cache_.data() + (size_t{layer} * n_ctx_ + pos) * kv_dim_;
}

float* reference_model::value_at(uint32_t layer, uint32_t pos) {
  return value_cache_.data() + (size_t{layer} * n_ctx_ + pos) * kv_dim_;
}

std::span<const float> reference_model::forward(token_id token, uint32_t pos) {
  if (token < 0 || static_cast<uint32_t>(token) >= hp_.n_vocab || pos > n_past_ || pos >= n_ctx_) {
    return {};
  }
  const size_t embd = hp_.n_embd;
  std::copy_n(w_.token_embd.begin() + static_cast<ptrdiff_t>(token * embd), embd, x_.begin());
  if (hp_.embd_scale != 1.0f) {
    for (float& v : x_) v *= hp_.embd_scale;  // gemma: sqrt(n_embd)
  }
  for (uint32_t l = 0; l < hp_.n_layer; ++l) {
    attention_block(l, pos);
    ffn_block(l);
  }
  ref::rmsnorm(x_, w_.output_norm, hp_.rms_eps, xb_);
  ref::matvec(w_.head(), xb_, logits_);  // head (n_vocab, n_embd) @ xb (n_embd,) -> (n_vocab,)
  if (hp_.final_softcap > 0.0f) ref::softcap(logits_, hp_.final_softcap);
  n_past_ = pos + 1;
  return logits_;
}

std::vector<std::vector<float>> reference_model::forward_all(std::span<const token_id> tokens,
                                                             uint32_t start_pos) {
  // Check everything first so that a bad batch leaves the cache as it was.
  const bool tokens_ok = std::all_of(tokens.begin(), tokens.end(), [&](token_id t) {
    return t >= 0 && static_cast<uint32_t>(t) < hp_.n_vocab;
  });
  if (!tokens_ok || start_pos > n_past_ || tokens.size() > n_ctx_ - std::min(start_pos, n_ctx_)) {
    return {};
  }
  std::vector<std::vector<float>> rows;
  rows.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto logits = forward(tokens[i], start_pos + static_cast<uint32_t>(i));
    rows.emplace_back(logits.begin(), logits.end());
  }
  return rows;
}

void reference_model::attention_block(uint32_t layer, uint32_t pos) {
  const reference_layer& lw = w_.layers[layer];
  const uint32_t hd = hp_.head_dim;
  std::span<float> k(key_at(layer, pos), kv_dim_);    // (kv_dim,) written straight into the cache
  std::span<float> v(value_at(layer, pos), kv_dim_);  // (kv_dim,)
  ref::rmsnorm(x_, lw.attn_norm, hp_.rms_eps, xb_);
  if (hp_.fused_qkv) {
    // phi3: wqkv (q_dim + 2 kv_dim, n_embd) @ xb -> [q | k | v], split by rows.
    // fused_ is sized for the larger of the two fused matrices: exactly this one's rows.
    ref::matvec(lw.wqkv, xb_, std::span(fused_).first(q_dim_ + 2 * size_t{kv_dim_}));
    std::copy_n(fused_.begin(), q_dim_, q_.begin());
    std::copy_n(fused_.begin() + q_dim_, kv_dim_, k.begin());
    std::copy_n(fused_.begin() + q_dim_ + kv_dim_, kv_dim_, v.begin());
  } else {
    ref::matvec(lw.wq, xb_, q_);  // wq (q_dim, n_embd) @ xb (n_embd,) -> q (q_dim,)
    ref::matvec(lw.wk, xb_, k);   // wk (kv_dim, n_embd) @ xb -> k (kv_dim,)
    ref::matvec(lw.wv, xb_, v);   // wv (kv_dim, n_embd) @ xb -> v (kv_dim,)
  }
  if (hp_.has_qkv_bias) {
    ref::add(q_, lw.bq);
    ref::add(k, lw.bk);
    ref::add(v, lw.bv);
  }
  if (hp_.has_qk_norm) {  // qwen3: every head of q and of k RMS-normed on its own, before RoPE
    for (uint32_t h = 0; h < hp_.n_head; ++h) {
      const auto head = std::span(q_).subspan(size_t{h} * hd, hd);
      ref::rmsnorm(head, lw.q_norm, hp_.rms_eps, head);
    }
    for (uint32_t h = 0; h < hp_.n_head_kv; ++h) {
      const auto head = k.subspan(size_t{h} * hd, hd);
      ref::rmsnorm(head, lw.k_norm, hp_.rms_eps, head);
    }
  }
  const hparams::layer_rope rp = hp_.rope_of(layer);  // gemma3's sliding layers: their own base
  for (uint32_t h = 0; h < hp_.n_head; ++h) {
    ref::rope(std::span(q_).subspan(size_t{h} * hd, hd), hp_.n_rot, pos, rp.base, hp_.pairing,
              rp.freq_factors, hp_.rope_attn_factor);
  }
  for (uint32_t h = 0; h < hp_.n_head_kv; ++h) {
    ref::rope(k.subspan(size_t{h} * hd, hd), hp_.n_rot, pos, rp.base, hp_.pairing, rp.freq_factors,
              hp_.rope_attn_factor);
  }
  attend(layer, pos);
  ref::matvec(lw.wo, att_out_, xb_);  // wo (n_embd, q_dim) @ att_out (q_dim,) -> xb (n_embd,)
  if (hp_.has_post_norms) ref::rmsnorm(xb_, lw.attn_post_norm, hp_.rms_eps, xb_);
  ref::add(x_, xb_);
}

void reference_model::attend(uint32_t layer, uint32_t pos) {
  const uint32_t hd = hp_.head_dim;
  const uint32_t group = hp_.n_head / hp_.n_head_kv;  // query heads sharing one kv head
  const double scale = hp_.kq_scale();
  // A sliding layer sees the last `window` positions, pos - window < t <= pos; others all of 0..pos.
  const uint32_t window = hp_.window(layer);
  const uint32_t first = window != 0 && pos + 1 > window ? pos + 1 - window : 0;
  std::span<float> scores(scores_.data() + first, size_t{pos} + 1 - first);  // scores[t - first]
  for (uint32_t h = 0; h < hp_.n_head; ++h) {
    const size_t kv_off = size_t{h / group} * hd;
    std::span<const float> q = std::span(q_).subspan(size_t{h} * hd, hd);  // (hd,)
    for (uint32_t t = first; t <= pos; ++t) {
      scores[t - first] = static_cast<float>(ref::dot(q, {key_at(layer, t) + kv_off, hd}) * scale);
    }
    if (hp_.attn_softcap > 0.0f) ref::softcap(scores, hp_.attn_softcap);
    ref::softmax(scores);
    // out_h (hd,) = sum_t scores[t] * v_t (hd,)
    for (uint32_t i = 0; i < hd; ++i) {
      double acc = 0.0;
      for (uint32_t t = first; t <= pos; ++t) {
        acc += static_cast<double>(scores[t - first]) * value_at(layer, t)[kv_off + i];
      }
      att_out_[size_t{h} * hd + i] = static_cast<float>(acc);
    }
  }
}

void reference_model::ffn_block(uint32_t layer) {
  const reference_layer& lw = w_.layers[layer];
  ref::rmsnorm(x_, lw.ffn_norm, hp_.rms_eps, xb_);
  if (hp_.fused_gate_up) {
    // phi3: w_gate_up (2 n_ff, n_embd) @ xb -> [gate | up], the first n_ff rows the gate.
    ref::matvec(lw.w_gate_up, xb_, std::span(fused_).first(2 * size_t{hp_.n_ff}));
    std::copy_n(fused_.begin(), hp_.n_ff, hb_.begin());
    std::copy_n(fused_.begin() + hp_.n_ff, hp_.n_ff, hb2_.begin());
  } else {
    ref::matvec(lw.w_gate, xb_, hb_);  // w_gate (n_ff, n_embd) @ xb (n_embd,) -> hb (n_ff,)
    ref::matvec(lw.w_up, xb_, hb2_);   // w_up (n_ff, n_embd) @ xb -> hb2 (n_ff,)
  }
  const bool gelu = hp_.act == ffn_activation::gelu;  // gemma's GeGLU, else SwiGLU
  for (size_t i = 0; i < hb_.size(); ++i) hb_[i] = (gelu ? ref::gelu(hb_[i]) : ref::silu(hb_[i])) * hb2_[i];
  ref::matvec(lw.w_down, hb_, xb_);  // w_down (n_embd, n_ff) @ hb (n_ff,) -> xb (n_embd,)
  if (hp_.has_post_norms) ref::rmsnorm(xb_, lw.ffn_post_norm, hp_.rms_eps, xb_);
  ref::add(x_, xb_);
}

}  // namespace hearth
