#pragma once
// Which backend a worker computes on, as `hearth serve`'s [engine] (backend, prefill_backend,
// decode_backend, device) and `hearth worker`'s --backend and --device name it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.hpp"
#include "kernels/backend.hpp"
#include "kernels/compute_type.hpp"
#include "model/gguf.hpp"

namespace hearth::cli {

struct backend_choice {
  std::string name = "cpu";  //!< "cpu" or "cuda"
  compute_type compute = compute_type::bf16;
  uint64_t kv_tokens = 0;        //!< the pool's capacity in positions
  std::string kernels = "auto";  //!< the CPU backend's matmul paths to choose among
  uint32_t device = 0;           //!< the CUDA device ordinal
  std::function<void(uint64_t done, uint64_t total)> progress = {};
};

//! The factory of the chosen backend over the model file; a build without the CUDA backend
//! refuses "cuda", naming `field` (what the user set: `[engine] backend`, `--backend`).
result<backend_factory> backend_named(const backend_choice& c, std::shared_ptr<const gguf::file> f,
                                      const std::string& field);

}  // namespace hearth::cli
