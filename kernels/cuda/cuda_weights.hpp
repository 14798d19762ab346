#pragma once
// A model's weights on the device, uploaded once: matrices in the compute type (quantized and
// f16 files dequantized on the way; the device keeps no file type of its own yet), norms, biases
// and RoPE frequencies in f32 / f64. The embedding table stays where the file maps it: a step's
// rows are dequantized on the host exactly as the CPU backend does and travel with the step (the
// device holds the table only as a tied head). Read-only once made, so backends sharing a device
// share it.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/model_tensors.hpp"
#include "model/vocab.hpp"

namespace hearth::cuda {

//! A stacked matrix (n_out, n_in) and its bias (n_out,) when it has one.
struct device_linear {
  device_buffer w;
  device_buffer bias;
  uint32_t n_out = 0;
  uint32_t n_in = 0;
};

struct device_layer {
  device_buffer attn_norm, ffn_norm;            // (d,)
  device_buffer q_norm, k_norm;                 // (head_dim,) qwen3, else empty
  device_buffer attn_post_norm, ffn_post_norm;  // (d,) gemma, else empty
  device_linear qkv, wo, gate_up, down;         // [q; k; v] and [gate; up] stacked, as the CPU's
  uint32_t rope = 0;                            // index in device_weights::rope_freqs
};

//! The embedding table in host memory, as the file stores it.
struct host_embedding {
  tensor_type type = tensor_type::f32;
  std::span<const std::byte> rows;   // (vocab, d)
  std::shared_ptr<const void> file;  // the file's mapping, which rows point into
  std::vector<std::byte> copy;       // rows' bytes when the file has no mapping

  //! Token t's row, dequantized into out (d,) and times `scale`.
  void row(token_id t, float scale, std::span<float> out) const;
};

struct device_weights {
  act_type type = act_type::bf16;
  host_embedding embd;
  device_buffer output_norm;
  device_linear head;  // (vocab, d): output.weight, or the embedding table when the head is tied
  std::vector<device_layer> layers;
  std::vector<device_buffer> rope_freqs;  // (n_rot / 2,) doubles, one per distinct RoPE of the layers
  size_t bytes = 0;
};

//! Uploads every weight of `ix` to the current device. progress(done, total) after each layer.
result<device_weights> upload_weights(const tensor_index& ix, const hparams& hp, act_type type,
                                      const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace hearth::cuda
