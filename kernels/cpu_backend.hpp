#pragma once
// The CPU backend: one iteration of a Llama-family model over a mixed batch, with oneDNN for
// the matrix work (kernels/matmul.hpp) and our own kernels for the rest (kernels/cpu_ops.hpp).
//
// Per iteration, T = all new tokens of all sequences, as rows of one activation matrix:
//   x (T, d) = embeddings  [gemma: * sqrt(d)]
//   per layer: h = rmsnorm(x);  qkv (T, q + 2kv) = h @ Wqkv^T (+ b);  [qwen3, gemma3: rmsnorm each q, k head]
//              rope(q, k) by row position (gemma3's sliding layers: their own base)
//              store k, v in the paged pool;  att (T, q) = paged_attention(q, pool)  [window, soft-cap]
//              x += att @ Wo^T [gemma: rmsnorm-ed first];  h = rmsnorm(x);  gu (T, 2 ff) = h @ [Wgate; Wup]^T
//              x += (act(gate) * up) @ Wdown^T  [act: silu, gemma's gelu; gemma: rmsnorm-ed first]
//   logits (R, vocab) = rmsnorm(x[rows that need logits]) @ Whead^T  [gemma2: soft-capped]
// Prefill chunks and decode tokens are the same thing here: rows with positions.

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu_ops.hpp"
#include "kernels/matmul.hpp"

namespace hearth {

namespace gguf {
class file;
}

struct cpu_backend_options {
  compute_type compute = compute_type::bf16;
  std::optional<kv_dtype> kv = std::nullopt;  //!< nullopt: kv_dtype_for(compute)
  uint32_t block_size = 16;                   //!< KV positions per block
  uint64_t kv_tokens = 0;                     //!< pool capacity in positions (0: see kv_bytes)
  uint64_t kv_bytes = 0;  //!< pool capacity in bytes (0 and kv_tokens 0: one full-context sequence)
  kernel_choice kernels = kernel_choice::automatic;  //!< which matmul paths the tuner may choose
  //! Told the layers prepared so far (the head counts as one more) and their number: loading a
  //! large file takes a while.
  std::function<void(uint64_t done, uint64_t total)> progress = {};
};

class cpu_backend final : public backend {
 public:
  //! Converts and reorders every weight once; errc::malformed naming a missing or misshapen
  //! tensor, errc::invalid_argument for bad options.
  static result<std::unique_ptr<cpu_backend>> load(const gguf::file& f, const cpu_backend_options& opt);
  //! load() as a backend_factory, for a worker that loads on its own thread; `f` stays mapped
  //! while the factory is kept.
  static backend_factory factory(std::shared_ptr<const gguf::file> f, cpu_backend_options opt);

  const hparams& params() const override { return hp_; }
  kv_pool& kv() override { return *kv_; }
  status<> forward(std::span<const batch_seq> batch, batch_logits& out) override;
  //! Shares the converted weights and the KV pool; only the per-iteration scratch is new.
  result<std::unique_ptr<backend>> share() override;

  //! Bytes of weights as computed (converted matrices, norms, embedding table).
  size_t weight_bytes() const;
  //! The first layer's linears' plans (qkv, wo, gate_up, down) and the head's: what the bench shows.
  std::array<matmul_plan, 5> plans() const;
  //! Whether attention multiplies in bf16 here (ops::decode_in_bf16; prefill too unless its
  //! blocks are too long): the bench shows it.
  bool attention_in_bf16() const;

 public:
  struct layer {
    std::vector<float> attn_norm;       // (d,)
    std::vector<float> ffn_norm;        // (d,)
    std::vector<float> q_norm;          // (head_dim,) qwen3's per-head norm of q, else empty
    std::vector<float> k_norm;          // (head_dim,) the same for k
    std::vector<float> attn_post_norm;  // (d,) gemma: on the attention's output, else empty
    std::vector<float> ffn_post_norm;   // (d,) gemma: on the FFN's output, else empty
    linear qkv;                         // (q + 2 kv, d) with biases for qwen2
    linear wo;                          // (d, q)
    linear gate_up;                     // (2 ff, d)
    linear down;                        // (d, ff)
  };

 private:
  // Read-only once loaded, so backends on several worker threads share one copy.
  struct weights {
    tensor_type embd_type = tensor_type::f32;
    std::span<const std::byte> embd;   // (vocab, d) as stored in the file; rows dequantized on use
    std::vector<std::byte> embd_copy;  // embd's bytes when the file has no mapping to read them in
    std::shared_ptr<const void> file;  // the file's mapping, which embd and kept weights point into
    std::vector<layer> layers;
    std::vector<float> output_norm;  // (d,)
    std::optional<linear> head;      // (vocab, d)
    bool bf16_attention = false;     // compute bf16: attention may multiply in bf16
  };

  cpu_backend(hparams hp, std::shared_ptr<const weights> w, std::shared_ptr<kv_pool> kv);
  status<> warm_up();
  void embed(std::span<const batch_seq> batch);
  void run_layer(const layer& l, uint32_t index, uint32_t n_rows, const ops::rope_table& rope);
  void compute_logits(std::span<const batch_seq> batch, batch_logits& out);

  hparams hp_;
  std::shared_ptr<const weights> w_;
  std::shared_ptr<kv_pool> kv_;

  // Per-iteration scratch, grown to the largest iteration seen.
  std::vector<ops::seq_rows> seqs_;
  std::vector<uint32_t> positions_;  // (T,)
  std::vector<float> x_, h_, qkv_, att_, gu_, ff_;
};

}  // namespace hearth
