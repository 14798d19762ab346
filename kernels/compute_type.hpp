#pragma once
// What a backend's matrix work computes in, on any device.

#include "kernels/kv_store.hpp"

namespace hearth {

//! bf16: bf16 x bf16 with f32 accumulation and f32 output.
enum class compute_type { f32, bf16 };
//! "f32" or "bf16".
inline const char* to_string(compute_type ct) {
  return ct == compute_type::f32 ? "f32" : "bf16";
}

//! The KV cache type that goes with a compute type: keys and values as precise as the matmuls.
inline kv_dtype kv_dtype_for(compute_type ct) {
  return ct == compute_type::f32 ? kv_dtype::f32 : kv_dtype::bf16;
}

}  // namespace hearth
