#pragma once
// A model's weights on the device, uploaded once: matrices in the compute type (quantized and
// f16 files dequantized on the way; the device keeps no file type of its own yet), norms, biases
// and RoPE frequencies in f32 / f64. Read-only once made, so backends sharing a device share it.

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/model_tensors.hpp"

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

struct device_weights {
  act_type type = act_type::bf16;
  device_buffer embd;  // (vocab, d) in `type`
  device_buffer output_norm;
  device_linear head;  // empty w when tied: the head is embd
  std::vector<device_layer> layers;
  std::vector<device_buffer> rope_freqs;  // (n_rot / 2,) doubles, one per distinct RoPE of the layers
  size_t bytes = 0;

  const void* head_weights() const { return head.w.empty() ? embd.get() : head.w.get(); }
};

//! Uploads every weight of `ix` to the current device. progress(done, total) after each layer.
result<device_weights> upload_weights(const tensor_index& ix, const hparams& hp, act_type type,
                                      const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace hearth::cuda
