#pragma once
// What the engine API says about its worker, and how it is given a backend: no CAF here, so the
// engine's face (engine.hpp) is free of it.

#include <cstdint>
#include <string>

#include "common/result.hpp"
#include "kernels/backend.hpp"

namespace hearth {

//! What a worker reports once it is pinned and its backend is loaded.
struct worker_info {
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  uint32_t n_blocks = 0;
  uint32_t block_size = 0;
  uint64_t block_bytes =
      0;  //!< one KV block's bytes (kv_layout::block_bytes): two sides that copy must agree
  uint32_t threads = 0;
  std::string cpus;    //!< the cpuset it is bound to, or "" when not pinned
  std::string device;  //!< what its backend computes on (backend::device_name)
};

}  // namespace hearth
