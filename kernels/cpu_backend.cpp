#include "kernels/cpu_backend.hpp"

#include <algorithm>
#include <exception>
#include <initializer_list>
#include <string>

#include "kernels/kernel_tuner.hpp"
#include "kernels/model_tensors.hpp"
#include "kernels/quant_dot.hpp"
#include "model/gguf.hpp"

namespace hearth {
namespace {

// A matrix as a part of a stacked linear, with its bias when there is one.
weight_part part(const tensor_index& ix, weight_kind k, uint32_t layer, std::span<const float> bias = {}) {
  const gguf::tensor_info* t = ix.get(k, layer);
  return {t->type, ix.data(k, layer), static_cast<uint32_t>(t->dims[1]), bias, ix.file().keep_alive()};
}

// Whether a linear keeps its parts as the file stores them: quantized types with dot kernels, in
// bf16 compute (f32 compute expands everything to f32; oneDNN's kernels need converted weights).
bool keep_quantized(std::span<const weight_part> parts, const cpu_backend_options& opt) {
  return opt.compute == compute_type::bf16 && opt.kernels != kernel_choice::onednn &&
         path_available(matmul_path::quant_dot) &&
         std::all_of(parts.begin(), parts.end(), [](const weight_part& p) { return quant::has_dot(p.type); });
}

// A linear kept quantized, or on the plan the process's tuner gives its shape.
result<linear> make_linear(std::span<const weight_part> parts, uint32_t n_in,
                           const cpu_backend_options& opt) {
  const bool quantized = keep_quantized(parts, opt);
  uint64_t n_out = 0;
  for (const auto& p : parts) n_out += p.n_out;
  if (n_out == 0 || n_out > UINT32_MAX || (quantized && !bytes_for(parts[0].type, n_in)))  // its error
    return linear::create(parts, n_in, quantized ? matmul_plan{quantized_paths} : default_plan(opt.compute));
  // Kept quantized, the plan is timed on blocks of the first part's type (a Q4_K_M file's q4_K
  // attn_q for a qkv whose attn_v is q6_K).
  auto plan = process_tuner().plan(n_in, static_cast<uint32_t>(n_out), opt.compute, opt.kernels,
                                   quantized ? parts[0].type : tensor_type::f32);
  if (!plan) return plan.error();
  return linear::create(parts, n_in, *plan);
}

bool kept(const linear& l) {
  return l.plan().storage() == weight_storage::quantized;
}

// One block's linears, each one stacked matrix: [q; k; v] and [gate; up] are three and two
// tensors in llama/qwen files and already one each in phi3's (attn_qkv, ffn_up of 2 n_ff rows),
// laid out the same way, so the forward does not know which it got.
result<cpu_backend::layer> load_layer(const tensor_index& ix, const hparams& hp, uint32_t l,
                                      const cpu_backend_options& opt) {
  std::vector<float> bq, bk, bv;
  if (hp.has_qkv_bias) {
    bq = ix.floats(weight_kind::attn_q_bias, l);
    bk = ix.floats(weight_kind::attn_k_bias, l);
    bv = ix.floats(weight_kind::attn_v_bias, l);
  }
  const std::vector<weight_kind> qkv_kinds =
      hp.fused_qkv ? std::vector{weight_kind::attn_qkv}
                   : std::vector{weight_kind::attn_q, weight_kind::attn_k, weight_kind::attn_v};
  const std::vector<weight_kind> gu_kinds = hp.fused_gate_up
                                                ? std::vector{weight_kind::ffn_gate_up}
                                                : std::vector{weight_kind::ffn_gate, weight_kind::ffn_up};
  const std::span<const float> biases[] = {bq, bk, bv};
  std::vector<weight_part> qkv, gate_up;
  for (size_t i = 0; i < qkv_kinds.size(); ++i) qkv.push_back(part(ix, qkv_kinds[i], l, biases[i]));
  for (weight_kind k : gu_kinds) gate_up.push_back(part(ix, k, l));
  const weight_part wo[] = {part(ix, weight_kind::attn_output, l)};
  const weight_part down[] = {part(ix, weight_kind::ffn_down, l)};
  auto lq = make_linear(qkv, hp.n_embd, opt);
  auto lo = make_linear(wo, hp.n_head * hp.head_dim, opt);
  auto lg = make_linear(gate_up, hp.n_embd, opt);
  auto ld = make_linear(down, hp.n_ff, opt);
  for (const auto* r : {&lq, &lo, &lg, &ld}) {
    if (!*r) return r->error();
  }
  // Converted weights' file pages go back to the kernel; kept ones are read in place.
  for (weight_kind k : qkv_kinds) {
    if (!kept(*lq)) ix.release({k}, l);
  }
  if (!kept(*lo)) ix.release({weight_kind::attn_output}, l);
  for (weight_kind k : gu_kinds) {
    if (!kept(*lg)) ix.release({k}, l);
  }
  if (!kept(*ld)) ix.release({weight_kind::ffn_down}, l);
  cpu_backend::layer out{ix.floats(weight_kind::attn_norm, l),
                         ix.floats(weight_kind::ffn_norm, l),
                         {},
                         {},
                         {},
                         {},
                         std::move(*lq),
                         std::move(*lo),
                         std::move(*lg),
                         std::move(*ld)};
  if (hp.has_qk_norm) {
    out.q_norm = ix.floats(weight_kind::attn_q_norm, l);
    out.k_norm = ix.floats(weight_kind::attn_k_norm, l);
  }
  if (hp.has_post_norms) {
    out.attn_post_norm = ix.floats(weight_kind::attn_post_norm, l);
    out.ffn_post_norm = ix.floats(weight_kind::ffn_post_norm, l);
  }
  return out;
}

// The rotation tables of one batch: one per distinct RoPE among the layers (gemma3's sliding
// layers have their own base and no frequency factors), shared by the layers that use it.
struct layer_ropes {
  std::vector<ops::rope_table> tables;
  std::vector<uint32_t> index;  // (n_layer,) the table of each layer

  const ops::rope_table& of(uint32_t layer) const { return tables[index[layer]]; }
};

layer_ropes make_ropes(const hparams& hp, std::span<const uint32_t> positions) {
  layer_ropes r{{}, std::vector<uint32_t>(hp.n_layer)};
  std::vector<hparams::layer_rope> made;  // made[i]: what tables[i] rotates by
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    const hparams::layer_rope rp = hp.rope_of(l);
    const auto known = std::find_if(made.begin(), made.end(), [&](const hparams::layer_rope& m) {
      return m.base == rp.base && m.freq_factors.data() == rp.freq_factors.data() &&
             m.freq_factors.size() == rp.freq_factors.size();
    });
    r.index[l] = static_cast<uint32_t>(known - made.begin());
    if (known != made.end()) continue;
    made.push_back(rp);
    r.tables.push_back(
        ops::make_rope_table(positions, hp.n_rot, rp.base, hp.pairing, rp.freq_factors, hp.rope_attn_factor));
  }
  return r;
}

}  // namespace

cpu_backend::cpu_backend(hparams hp, std::shared_ptr<const weights> w, std::shared_ptr<kv_pool> kv)
    : hp_(std::move(hp)), w_(std::move(w)), kv_(std::move(kv)) {}

result<std::unique_ptr<backend>> cpu_backend::share() {
  return std::unique_ptr<backend>(new cpu_backend(hp_, w_, kv_));
}

backend_factory cpu_backend::factory(std::shared_ptr<const gguf::file> f, cpu_backend_options opt) {
  return [f = std::move(f), opt = std::move(opt)]() -> result<std::unique_ptr<backend>> {
    auto b = load(*f, opt);
    if (!b) return b.error();
    return std::unique_ptr<backend>(std::move(*b));
  };
}

result<std::unique_ptr<cpu_backend>> cpu_backend::load(const gguf::file& f, const cpu_backend_options& opt) {
  // Before the pool is zeroed and any weight read: a contradiction in the options is told first.
  if (auto st = check_kernel_choice(opt.compute, opt.kernels); !st) return st.error();
  auto hp = read_hparams(f);
  if (!hp) return hp.error();
  auto ix = tensor_index::build(f, *hp);
  if (!ix) return ix.error();
  const kv_layout layout{hp->n_layer, hp->n_head_kv, hp->head_dim, opt.block_size,
                         opt.kv.value_or(kv_dtype_for(opt.compute))};
  auto n_blocks = pool_blocks(layout, opt.kv_tokens, opt.kv_bytes, hp->n_ctx_train, "cpu backend");
  if (!n_blocks) return n_blocks.error();
  auto pool = kv_pool::create(layout, *n_blocks);
  if (!pool) return pool.error();

  auto w = std::make_shared<weights>();
  const uint32_t d = hp->n_embd;
  for (uint32_t l = 0; l < hp->n_layer; ++l) {
    auto lw = load_layer(*ix, *hp, l, opt);
    if (!lw) return lw.error();
    w->layers.push_back(std::move(*lw));
    if (opt.progress) opt.progress(l + 1, hp->n_layer + 1);
  }
  w->output_norm = ix->floats(weight_kind::output_norm);
  w->bf16_attention = opt.compute == compute_type::bf16;
  const weight_kind head_kind = hp->tied_output ? weight_kind::token_embd : weight_kind::output;
  const weight_part head[] = {part(*ix, head_kind, 0)};
  auto lh = make_linear(head, d, opt);
  if (!lh) return lh.error();
  // The embedding table's rows are read where the file maps them (a copy only of a file without
  // a mapping): they are dequantized row by row on use.
  w->embd_type = ix->get(weight_kind::token_embd)->type;
  w->embd = ix->data(weight_kind::token_embd);
  w->file = f.keep_alive();
  if (!w->file) {
    w->embd_copy.assign(w->embd.begin(), w->embd.end());
    w->embd = w->embd_copy;
  }
  if (!hp->tied_output && !kept(*lh)) ix->release({head_kind});
  w->head.emplace(std::move(*lh));
  if (opt.progress) opt.progress(hp->n_layer + 1, hp->n_layer + 1);
  auto be = std::unique_ptr<cpu_backend>(
      new cpu_backend(*hp, std::move(w), std::make_shared<kv_pool>(std::move(*pool))));
  if (auto st = be->warm_up(); !st) return st.error();
  return be;
}

// One token through the model, its KV block zeroed again after. The first forward faults in the
// weights' pages (the file's, for weights read in place: once for the process, so backends that
// share() these weights start warm too) and sets up this thread's scratch and thread team, which
// a server's first request would otherwise wait for. After loading `1b` q4_k_m (AMD EPYC Zen 5,
// the file cached in 2 MiB folios), the first prompt of 64 tokens took 360 ms against 252-257 for
// the next ones; warmed up, 226 against 202-213. A model that fails here fails to load.
status<> cpu_backend::warm_up() {
  const token_id token = 0;
  const uint32_t block = 0;
  const batch_seq seq{{&token, 1}, 0, {&block, 1}};
  batch_logits logits;
  status<> st;
  try {
    st = forward({&seq, 1}, logits);
  } catch (const std::exception& e) {
    st = error{errc::unsupported, std::string("cpu backend: the warm-up forward threw: ") + e.what()};
  }
  const std::span<std::byte> kv = kv_->block(block);
  std::fill(kv.begin(), kv.end(), std::byte{0});
  return st;
}

std::array<matmul_plan, 5> cpu_backend::plans() const {
  const layer& l = w_->layers.front();
  return {l.qkv.plan(), l.wo.plan(), l.gate_up.plan(), l.down.plan(), w_->head->plan()};
}

bool cpu_backend::attention_in_bf16() const {
  return ops::decode_in_bf16(kv_->layout(), {.in_bf16 = w_->bf16_attention});
}

size_t cpu_backend::weight_bytes() const {
  size_t n = w_->embd.size() + w_->output_norm.size() * 4 + w_->head->weight_bytes();
  for (const layer& l : w_->layers) {
    n += (l.attn_norm.size() + l.ffn_norm.size() + l.attn_post_norm.size() + l.ffn_post_norm.size()) * 4;
    n += l.qkv.weight_bytes() + l.wo.weight_bytes() + l.gate_up.weight_bytes() + l.down.weight_bytes();
  }
  return n;
}

status<> cpu_backend::forward(std::span<const batch_seq> batch, batch_logits& out) {
  if (auto st = check_batch(batch, hp_, kv_->layout(), kv_->n_blocks()); !st) return st;
  seqs_.clear();
  positions_.clear();
  for (const batch_seq& s : batch) {
    const auto n = static_cast<uint32_t>(s.tokens.size());
    seqs_.push_back({static_cast<uint32_t>(positions_.size()), n, s.start_pos, s.blocks});
    for (uint32_t i = 0; i < n; ++i) positions_.push_back(s.start_pos + i);
  }
  const auto n_rows = static_cast<uint32_t>(positions_.size());
  const size_t q_dim = size_t{hp_.n_head} * hp_.head_dim, qkv_dim = q_dim + 2 * size_t{hp_.n_embd_kv()};
  x_.resize(size_t{n_rows} * hp_.n_embd);
  h_.resize(size_t{n_rows} * hp_.n_embd);
  qkv_.resize(n_rows * qkv_dim);
  att_.resize(n_rows * q_dim);
  gu_.resize(size_t{n_rows} * 2 * hp_.n_ff);
  ff_.resize(size_t{n_rows} * hp_.n_ff);

  embed(batch);
  const layer_ropes ropes = make_ropes(hp_, positions_);
  for (uint32_t l = 0; l < hp_.n_layer; ++l) run_layer(w_->layers[l], l, n_rows, ropes.of(l));
  compute_logits(batch, out);
  return {};
}

void cpu_backend::embed(std::span<const batch_seq> batch) {
  const uint32_t d = hp_.n_embd;
  const size_t row_bytes = *bytes_for(w_->embd_type, d);
  size_t r = 0;
  for (const batch_seq& s : batch) {
    for (token_id t : s.tokens) {
      const std::span<float> row = std::span(x_).subspan(r++ * d, d);
      dequantize(w_->embd_type, w_->embd.subspan(static_cast<size_t>(t) * row_bytes, row_bytes), row);
      if (hp_.embd_scale != 1.0f) {
        for (float& v : row) v *= hp_.embd_scale;  // gemma: sqrt(n_embd)
      }
    }
  }
}

void cpu_backend::run_layer(const layer& l, uint32_t index, uint32_t n_rows, const ops::rope_table& rope) {
  const size_t d = hp_.n_embd, q_dim = size_t{hp_.n_head} * hp_.head_dim, kv_dim = hp_.n_embd_kv();
  const size_t qkv_dim = q_dim + 2 * kv_dim;
  ops::rmsnorm({x_.data(), d}, l.attn_norm, hp_.rms_eps, {h_.data(), d}, n_rows);
  l.qkv.forward(h_.data(), qkv_.data(), n_rows);
  if (hp_.has_qk_norm) {
    // qwen3: each q head and each k head of every row normalised on its own (head_dim,) before
    // RoPE; a row's heads are the rows of a (heads, head_dim) matrix, normalised in place.
    for (uint32_t r = 0; r < n_rows; ++r) {
      float* q = qkv_.data() + r * qkv_dim;
      ops::rmsnorm({q, hp_.head_dim}, l.q_norm, hp_.rms_eps, {q, hp_.head_dim}, hp_.n_head);
      ops::rmsnorm({q + q_dim, hp_.head_dim}, l.k_norm, hp_.rms_eps, {q + q_dim, hp_.head_dim},
                   hp_.n_head_kv);
    }
  }
  // q and k heads lie side by side at the start of each fused row: one rotation covers both.
  ops::rope({qkv_.data(), qkv_dim}, n_rows, hp_.n_head + hp_.n_head_kv, hp_.head_dim, rope);
  ops::store_kv(*kv_, index, {qkv_.data() + q_dim, qkv_dim}, {qkv_.data() + q_dim + kv_dim, qkv_dim}, seqs_);
  const ops::attn_params attn{hp_.kq_scale(), hp_.attn_softcap, hp_.window(index), w_->bf16_attention};
  ops::paged_attention(*kv_, index, hp_.n_head, {qkv_.data(), qkv_dim}, {att_.data(), q_dim}, seqs_, attn);
  l.wo.forward(att_.data(), h_.data(), n_rows);
  if (hp_.has_post_norms) ops::rmsnorm({h_.data(), d}, l.attn_post_norm, hp_.rms_eps, {h_.data(), d}, n_rows);
  ops::add({x_.data(), d}, {h_.data(), d}, n_rows, static_cast<uint32_t>(d));

  ops::rmsnorm({x_.data(), d}, l.ffn_norm, hp_.rms_eps, {h_.data(), d}, n_rows);
  l.gate_up.forward(h_.data(), gu_.data(), n_rows);
  ops::gated_act({gu_.data(), 2 * size_t{hp_.n_ff}}, {ff_.data(), hp_.n_ff}, n_rows, hp_.n_ff, hp_.act);
  l.down.forward(ff_.data(), h_.data(), n_rows);
  if (hp_.has_post_norms) ops::rmsnorm({h_.data(), d}, l.ffn_post_norm, hp_.rms_eps, {h_.data(), d}, n_rows);
  ops::add({x_.data(), d}, {h_.data(), d}, n_rows, static_cast<uint32_t>(d));
}

void cpu_backend::compute_logits(std::span<const batch_seq> batch, batch_logits& out) {
  // Gather the rows that need logits (each sequence's last, or all of them) into h_.
  const size_t d = hp_.n_embd;
  out.first_row.clear();
  uint32_t n_out = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    const ops::seq_rows& q = seqs_[s];
    out.first_row.push_back(n_out);
    const uint32_t first = batch[s].all_logits ? q.first_row : q.first_row + q.n_rows - 1;
    for (uint32_t r = first; r < q.first_row + q.n_rows; ++r, ++n_out) {
      std::copy_n(x_.data() + r * d, d, h_.data() + size_t{n_out} * d);
    }
  }
  ops::rmsnorm({h_.data(), d}, w_->output_norm, hp_.rms_eps, {h_.data(), d}, n_out);
  out.n_vocab = hp_.n_vocab;
  out.values.resize(size_t{n_out} * hp_.n_vocab);
  w_->head->forward(h_.data(), out.values.data(), n_out);
  if (hp_.final_softcap > 0.0f) ops::softcap(out.values, hp_.final_softcap);
}

}  // namespace hearth
