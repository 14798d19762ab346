#include "kernels/cuda/cuda_backend.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/cuda/cuda_gemm.hpp"
#include "kernels/cuda/cuda_kv_pool.hpp"
#include "kernels/cuda/cuda_weights.hpp"
#include "kernels/kv_pool.hpp"
#include "model/gguf.hpp"

namespace hearth {

using cuda::act_type;
using cuda::check;

struct cuda_backend::state {
  state(hparams p, int dev, act_type t, std::shared_ptr<const cuda::device_weights> weights,
        std::shared_ptr<cuda::kv_pool_device> pool, cuda::stream st, std::unique_ptr<cuda::gemm> g)
      : hp(std::move(p)),
        device(dev),
        act(t),
        w(std::move(weights)),
        kv(std::move(pool)),
        s(std::move(st)),
        mm(std::move(g)) {}

  hparams hp;
  int device = 0;
  act_type act = act_type::bf16;
  std::shared_ptr<const cuda::device_weights> w;
  std::shared_ptr<cuda::kv_pool_device> kv;
  // Declared before what runs on it: destroyed after.
  cuda::stream s;
  std::unique_ptr<cuda::gemm> mm;

  // Per-step scratch, grown to the largest step seen.
  std::vector<uint32_t> meta;  // [positions | table starts | logits rows | tables]
  cuda::pinned_buffer meta_host, x_host, logits_host;
  cuda::device_buffer meta_dev, x, h, a, qkv, gu, logits;

  size_t act_bytes() const { return act == act_type::bf16 ? 2 : 4; }
  cuda::kv_geometry geometry() const {
    const kv_layout& l = kv->layout();
    return {l.n_layer, l.n_head_kv, l.head_dim, l.block_size, l.dtype == kv_dtype::bf16};
  }
};

namespace {

// The gemm's plans key m, n and k in 21 bits each; the attention kernel keeps a head in 8 dims a lane.
constexpr uint32_t max_dim = (1u << 21) - 1;
constexpr uint32_t max_head_dim = 256;

status<> check_shapes(const hparams& hp) {
  auto refuse = [](const std::string& what) { return error{errc::unsupported, "cuda backend: " + what}; };
  if (hp.head_dim > max_head_dim) {
    return refuse("head_dim " + std::to_string(hp.head_dim) + " is over the attention kernel's " +
                  std::to_string(max_head_dim));
  }
  if (hp.n_rot % 2 != 0) return refuse("rope.dimension_count must be even");
  const uint64_t widest = std::max({uint64_t{hp.n_vocab}, uint64_t{hp.n_embd}, 2 * uint64_t{hp.n_ff},
                                    uint64_t{hp.n_head} * hp.head_dim + 2 * uint64_t{hp.n_embd_kv()}});
  if (widest > max_dim) return refuse("a matrix dimension of " + std::to_string(widest) + " is over 2^21");
  return {};
}

// A backend's own stream, matrix handle and scratch over weights and a pool on `device`.
result<std::unique_ptr<cuda_backend::state>> make_state(const hparams& hp, int device, act_type act,
                                                        std::shared_ptr<const cuda::device_weights> w,
                                                        std::shared_ptr<cuda::kv_pool_device> kv) {
  if (auto st = check(cudaSetDevice(device), "selecting device " + std::to_string(device)); !st)
    return st.error();
  auto s = cuda::stream::create();
  if (!s) return s.error();
  auto mm = cuda::gemm::create(s->get());
  if (!mm) return mm.error();
  return std::make_unique<cuda_backend::state>(hp, device, act, std::move(w), std::move(kv), std::move(*s),
                                               std::move(*mm));
}

}  // namespace

int cuda_backend::device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    cudaGetLastError();  // not sticky: clear it for the next call
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device";
  return n;
}

cuda_backend::cuda_backend(std::unique_ptr<state> s) : s_(std::move(s)) {}
cuda_backend::~cuda_backend() = default;

const hparams& cuda_backend::params() const {
  return s_->hp;
}
kv_store& cuda_backend::kv() {
  return *s_->kv;
}
size_t cuda_backend::weight_bytes() const {
  return s_->w->bytes;
}
int cuda_backend::device() const {
  return s_->device;
}
std::string cuda_backend::device_name() const {
  cudaDeviceProp prop{};
  const bool named = cudaGetDeviceProperties(&prop, s_->device) == cudaSuccess;
  if (!named) cudaGetLastError();  // not the next step's error
  return "cuda:" + std::to_string(s_->device) + (named ? std::string(" (") + prop.name + ")" : std::string());
}

result<std::unique_ptr<cuda_backend>> cuda_backend::load(const gguf::file& f,
                                                         const cuda_backend_options& opt) {
  std::string why;
  const int n_devices = device_count(&why);
  if (n_devices == 0) return error{errc::unsupported, "cuda backend: no device: " + why};
  if (opt.device < 0 || opt.device >= n_devices) {
    return error{errc::invalid_argument,
                 "cuda backend: device " + std::to_string(opt.device) + " of " + std::to_string(n_devices)};
  }
  if (auto st = check(cudaSetDevice(opt.device), "selecting device " + std::to_string(opt.device)); !st)
    return st.error();
  auto hp = read_hparams(f);
  if (!hp) return hp.error();
  if (auto st = check_shapes(*hp); !st) return st.error();
  auto ix = tensor_index::build(f, *hp);
  if (!ix) return ix.error();
  const kv_layout layout{hp->n_layer, hp->n_head_kv, hp->head_dim, opt.block_size,
                         opt.kv.value_or(kv_dtype_for(opt.compute))};
  auto n_blocks = pool_blocks(layout, opt.kv_tokens, opt.kv_bytes, hp->n_ctx_train, "cuda backend");
  if (!n_blocks) return n_blocks.error();
  const act_type act = opt.compute == compute_type::bf16 ? act_type::bf16 : act_type::f32;
  auto w = cuda::upload_weights(*ix, *hp, act, opt.progress);
  if (!w) return w.error();
  auto pool = cuda::kv_pool_device::create(layout, *n_blocks, opt.device);
  if (!pool) return pool.error();
  // The uploads ran on the legacy stream, which the backend's streams do not wait for: done
  // before the first step.
  if (auto st = check(cudaDeviceSynchronize(), "finishing the upload"); !st) return st.error();
  auto s = make_state(*hp, opt.device, act, std::make_shared<const cuda::device_weights>(std::move(*w)),
                      std::move(*pool));
  if (!s) return s.error();
  return std::unique_ptr<cuda_backend>(new cuda_backend(std::move(*s)));
}

result<std::unique_ptr<backend>> cuda_backend::share() {
  auto s = make_state(s_->hp, s_->device, s_->act, s_->w, s_->kv);
  if (!s) return s.error();
  return std::unique_ptr<backend>(new cuda_backend(std::move(*s)));
}

namespace {

status<> reserve_scratch(cuda_backend::state& S, uint32_t rows) {
  const hparams& hp = S.hp;
  const size_t q_dim = size_t{hp.n_head} * hp.head_dim, qkv_dim = q_dim + 2 * size_t{hp.n_embd_kv()};
  const size_t widest_input = std::max({size_t{hp.n_embd}, q_dim, size_t{hp.n_ff}});
  const std::pair<cuda::device_buffer*, size_t> sizes[] = {
      {&S.x, size_t{rows} * hp.n_embd * 4},
      {&S.h, size_t{rows} * hp.n_embd * 4},
      {&S.a, size_t{rows} * widest_input * S.act_bytes()},
      {&S.qkv, size_t{rows} * qkv_dim * 4},
      {&S.gu, size_t{rows} * 2 * hp.n_ff * 4}};
  for (const auto& [buffer, bytes] : sizes) {
    if (auto st = buffer->reserve(bytes, "a step's activations"); !st) return st;
  }
  return {};
}

// Where the step's metadata sits on the device, after one upload.
struct step_meta {
  cuda::row_table rows;
  const uint32_t* logits_rows;
  uint32_t n_rows;
  uint32_t n_logits;
};

// Packs positions, table starts, the rows that need logits and every block table into one array
// and uploads it; dequantizes the tokens' embedding rows on the host, as the CPU backend does, and
// uploads them as the residual stream x; fills out.first_row.
result<step_meta> upload_step(cuda_backend::state& S, std::span<const batch_seq> batch, batch_logits& out) {
  uint32_t n_rows = 0, n_logits = 0;
  size_t n_tables = 0;
  for (const batch_seq& q : batch) {
    n_rows += static_cast<uint32_t>(q.tokens.size());
    n_logits += q.all_logits ? static_cast<uint32_t>(q.tokens.size()) : 1;
    n_tables += q.blocks.size();
  }
  if (n_rows > max_dim) return error{errc::invalid_argument, "cuda backend: a step of over 2^21 tokens"};
  if (auto st = reserve_scratch(S, n_rows); !st) return st.error();
  const uint32_t d = S.hp.n_embd;
  const size_t x_bytes = size_t{n_rows} * d * 4;
  if (auto st = S.x_host.reserve(x_bytes, "a step's embeddings"); !st) return st.error();
  std::vector<uint32_t>& m = S.meta;
  m.assign(2 * size_t{n_rows} + n_logits + n_tables, 0);
  uint32_t *positions = m.data(), *starts = positions + n_rows, *logits_rows = starts + n_rows;
  uint32_t* tables = logits_rows + n_logits;
  uint32_t r = 0, l = 0, t = 0;
  out.first_row.clear();
  for (const batch_seq& q : batch) {
    out.first_row.push_back(l);
    std::copy(q.blocks.begin(), q.blocks.end(), tables + t);
    const auto n = static_cast<uint32_t>(q.tokens.size());
    for (uint32_t i = 0; i < n; ++i, ++r) {
      S.w->embd.row(q.tokens[i], S.hp.embd_scale, {S.x_host.as<float>() + size_t{r} * d, d});
      positions[r] = q.start_pos + i;
      starts[r] = t;
      if (q.all_logits || i + 1 == n) logits_rows[l++] = r;
    }
    t += static_cast<uint32_t>(q.blocks.size());
  }
  const size_t bytes = m.size() * sizeof(uint32_t);
  if (auto st = S.meta_host.reserve(bytes, "a step's tables"); !st) return st.error();
  if (auto st = S.meta_dev.reserve(bytes, "a step's tables"); !st) return st.error();
  std::memcpy(S.meta_host.as<uint32_t>(), m.data(), bytes);
  if (auto st = check(cudaMemcpyAsync(S.meta_dev.get(), S.meta_host.as<uint32_t>(), bytes,
                                      cudaMemcpyHostToDevice, S.s.get()),
                      "uploading a step's tables");
      !st)
    return st.error();
  if (auto st =
          check(cudaMemcpyAsync(S.x.get(), S.x_host.as<float>(), x_bytes, cudaMemcpyHostToDevice, S.s.get()),
                "uploading a step's embeddings");
      !st)
    return st.error();
  const auto* dev = S.meta_dev.as<const uint32_t>();
  return step_meta{
      {dev, dev + n_rows, dev + 2 * size_t{n_rows} + n_logits}, dev + 2 * size_t{n_rows}, n_rows, n_logits};
}

// y (rows, lin.n_out) = x (rows, lin.n_in) lin^T, plus its bias.
status<> linear(cuda_backend::state& S, const cuda::device_linear& lin, const void* x, float* y,
                uint32_t rows) {
  if (auto st = S.mm->run(x, lin.w.get(), y, rows, lin.n_out, lin.n_in, S.act); !st) return st;
  if (!lin.bias.empty()) cuda::add_bias(y, lin.n_out, lin.bias.as<float>(), lin.n_out, rows, S.s.get());
  return {};
}

// x += h, h first normalised by `post` when the model has post-norms (gemma).
void residual(cuda_backend::state& S, const cuda::device_buffer& post, uint32_t rows) {
  const hparams& hp = S.hp;
  float* h = S.h.as<float>();
  if (!post.empty()) {
    cuda::rmsnorm(h, hp.n_embd, 1, post.as<float>(), hp.n_embd, hp.rms_eps, h, act_type::f32, hp.n_embd, rows,
                  S.s.get());
  }
  cuda::add(S.x.as<float>(), h, size_t{rows} * hp.n_embd, S.s.get());
}

status<> attention_block(cuda_backend::state& S, const cuda::device_layer& l, uint32_t index,
                         const step_meta& m) {
  const hparams& hp = S.hp;
  const cudaStream_t s = S.s.get();
  const uint32_t d = hp.n_embd, hd = hp.head_dim, q_dim = hp.n_head * hd, kv_dim = hp.n_embd_kv();
  const uint32_t qkv_dim = q_dim + 2 * kv_dim, rows = m.n_rows;
  float* qkv = S.qkv.as<float>();
  cuda::rmsnorm(S.x.as<float>(), d, 1, l.attn_norm.as<float>(), d, hp.rms_eps, S.a.get(), S.act, d, rows, s);
  if (auto st = linear(S, l.qkv, S.a.get(), qkv, rows); !st) return st;
  if (hp.has_qk_norm) {
    cuda::rmsnorm(qkv, qkv_dim, hp.n_head, l.q_norm.as<float>(), hd, hp.rms_eps, qkv, act_type::f32, qkv_dim,
                  rows, s);
    cuda::rmsnorm(qkv + q_dim, qkv_dim, hp.n_head_kv, l.k_norm.as<float>(), hd, hp.rms_eps, qkv + q_dim,
                  act_type::f32, qkv_dim, rows, s);
  }
  // q and k heads lie side by side at the start of each row: one rotation covers both.
  cuda::rope(qkv, qkv_dim, rows, hp.n_head + hp.n_head_kv, hd, hp.n_rot, hp.pairing == rope_pairing::halves,
             m.rows.positions, S.w->rope_freqs[l.rope].as<double>(), hp.rope_attn_factor, s);
  const cuda::kv_geometry g = S.geometry();
  cuda::store_kv(qkv, qkv_dim, q_dim, q_dim + kv_dim, rows, m.rows, g, index, S.kv->data(), s);
  const cuda::attention_args args{qkv,           qkv_dim,         hp.n_head,        rows,      index,
                                  hp.kq_scale(), hp.attn_softcap, hp.window(index), S.a.get(), S.act,
                                  q_dim};
  cuda::paged_attention(args, m.rows, g, S.kv->data(), s);
  if (auto st = linear(S, l.wo, S.a.get(), S.h.as<float>(), rows); !st) return st;
  residual(S, l.attn_post_norm, rows);
  return {};
}

status<> ffn_block(cuda_backend::state& S, const cuda::device_layer& l, uint32_t rows) {
  const hparams& hp = S.hp;
  const cudaStream_t s = S.s.get();
  cuda::rmsnorm(S.x.as<float>(), hp.n_embd, 1, l.ffn_norm.as<float>(), hp.n_embd, hp.rms_eps, S.a.get(),
                S.act, hp.n_embd, rows, s);
  if (auto st = linear(S, l.gate_up, S.a.get(), S.gu.as<float>(), rows); !st) return st;
  cuda::gated_act(S.gu.as<float>(), hp.n_ff, rows, hp.act == ffn_activation::gelu, S.a.get(), S.act, s);
  if (auto st = linear(S, l.down, S.a.get(), S.h.as<float>(), rows); !st) return st;
  residual(S, l.ffn_post_norm, rows);
  return {};
}

// The logits of the rows that need them, back in host memory.
status<> logits(cuda_backend::state& S, const step_meta& m, batch_logits& out) {
  const hparams& hp = S.hp;
  const cudaStream_t s = S.s.get();
  const size_t bytes = size_t{m.n_logits} * hp.n_vocab * 4;
  if (auto st = S.logits.reserve(bytes, "logits"); !st) return st;
  if (auto st = S.logits_host.reserve(bytes, "logits"); !st) return st;
  cuda::gather_rows(S.x.as<float>(), hp.n_embd, m.logits_rows, m.n_logits, S.h.as<float>(), s);
  cuda::rmsnorm(S.h.as<float>(), hp.n_embd, 1, S.w->output_norm.as<float>(), hp.n_embd, hp.rms_eps, S.a.get(),
                S.act, hp.n_embd, m.n_logits, s);
  if (auto st = S.mm->run(S.a.get(), S.w->head.w.get(), S.logits.as<float>(), m.n_logits, hp.n_vocab,
                          hp.n_embd, S.act);
      !st)
    return st;
  if (hp.final_softcap > 0.0f) cuda::softcap(S.logits.as<float>(), bytes / 4, hp.final_softcap, s);
  if (auto st =
          check(cudaMemcpyAsync(S.logits_host.as<float>(), S.logits.get(), bytes, cudaMemcpyDeviceToHost, s),
                "bringing logits back");
      !st)
    return st;
  if (auto st = check(cudaStreamSynchronize(s), "running a step"); !st) return st;
  if (auto st = check(cudaGetLastError(), "a step's kernels"); !st) return st;
  out.n_vocab = hp.n_vocab;
  out.values.resize(bytes / 4);
  std::memcpy(out.values.data(), S.logits_host.as<float>(), bytes);
  return {};
}

status<> run_step(cuda_backend::state& S, std::span<const batch_seq> batch, batch_logits& out) {
  auto m = upload_step(S, batch, out);
  if (!m) return m.error();
  for (uint32_t l = 0; l < S.hp.n_layer; ++l) {
    if (auto st = attention_block(S, S.w->layers[l], l, *m); !st) return st;
    if (auto st = ffn_block(S, S.w->layers[l], m->n_rows); !st) return st;
  }
  return logits(S, *m, out);
}

}  // namespace

status<> cuda_backend::forward(std::span<const batch_seq> batch, batch_logits& out) {
  state& S = *s_;
  if (auto st = check_batch(batch, S.hp, S.kv->layout(), S.kv->n_blocks()); !st) return st;
  if (auto st = check(cudaSetDevice(S.device), "selecting device " + std::to_string(S.device)); !st)
    return st;
  status<> st = run_step(S, batch, out);
  if (!st) {
    // Nothing of a failed step may run on: its copies read the pinned buffers the next step
    // fills, its kernels write blocks the scheduler may give to another sequence, and its
    // launch error would be the next step's.
    cudaStreamSynchronize(S.s.get());
    cudaGetLastError();
  }
  return st;
}

backend_factory cuda_backend::factory(std::shared_ptr<const gguf::file> f, cuda_backend_options opt) {
  return [f = std::move(f), opt = std::move(opt)]() -> result<std::unique_ptr<backend>> {
    auto b = load(*f, opt);
    if (!b) return b.error();
    return std::unique_ptr<backend>(std::move(*b));
  };
}

}  // namespace hearth
