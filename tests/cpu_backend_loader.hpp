#pragma once
// The CPU backend as the backend-contract and family tests load it.
#include "kernels/cpu_backend.hpp"
#include "model_test_support.hpp"

namespace hearth::test {

inline backend_loader cpu_backend_loader() {
  return [](const gguf::file& f, const backend_options& o) -> std::unique_ptr<backend> {
    auto b = cpu_backend::load(
        f, {.compute = o.compute, .kv = o.kv, .block_size = o.block_size, .kv_tokens = o.kv_tokens});
    if (!b) FAIL(b.error().message);
    return std::move(*b);
  };
}

}  // namespace hearth::test
