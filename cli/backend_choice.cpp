#include "cli/backend_choice.hpp"

#include <utility>

#include "kernels/cpu_backend.hpp"
#include "kernels/matmul_plan.hpp"
#ifdef HEARTH_HAS_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif

namespace hearth::cli {

result<backend_factory> backend_named(const backend_choice& c, std::shared_ptr<const gguf::file> f,
                                      [[maybe_unused]] const std::string& field) {
  if (c.name == "cpu") {
    return cpu_backend::factory(
        std::move(f), {.compute = c.compute,
                       .kv_tokens = c.kv_tokens,
                       .kernels = kernel_choice_from_name(c.kernels).value_or(kernel_choice::automatic),
                       .progress = c.progress});
  }
#ifdef HEARTH_HAS_CUDA
  return cuda_backend::factory(std::move(f), {.compute = c.compute,
                                              .kv_tokens = c.kv_tokens,
                                              .device = static_cast<int>(c.device),
                                              .progress = c.progress});
#else
  return error{errc::unsupported, field + " \"" + c.name +
                                      "\": this build of Hearth has no CUDA backend (build it where the CUDA "
                                      "toolkit is: docs/cuda.md)"};
#endif
}

}  // namespace hearth::cli
