#pragma once
// The CUDA backend: the CPU backend's forward (kernels/cpu_backend.hpp) on a GPU, behind the same
// seam, over the same block tables. Weights are uploaded once in the compute type; the KV pool
// lives in device memory (cuda_kv_pool.hpp); matrix products are cuBLASLt's, the rest our own
// kernels (cuda_ops.hpp). A step uploads its tokens, positions and tables in one copy and
// brings back only the logits rows it needs. No CUDA header here.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernels/backend.hpp"
#include "kernels/compute_type.hpp"

namespace hearth {

namespace gguf {
class file;
}

struct cuda_backend_options {
  compute_type compute = compute_type::bf16;
  std::optional<kv_dtype> kv = std::nullopt;  //!< nullopt: kv_dtype_for(compute)
  uint32_t block_size = 16;                   //!< KV positions per block
  uint64_t kv_tokens = 0;                     //!< pool capacity in positions (0: see kv_bytes)
  uint64_t kv_bytes = 0;  //!< pool capacity in bytes (0 and kv_tokens 0: one full-context sequence)
  int device = 0;         //!< CUDA device ordinal
  std::function<void(uint64_t done, uint64_t total)> progress = {};
};

class cuda_backend final : public backend {
 public:
  //! The CUDA devices this process can use; 0 without a driver or a device, `why` saying which.
  static int device_count(std::string* why = nullptr);

  //! Uploads every weight; errc::unsupported without a device (or for a shape the kernels do not
  //! take, naming it), errc::malformed naming a missing or misshapen tensor, errc::limit_exceeded
  //! when the weights or the pool do not fit the device.
  static result<std::unique_ptr<cuda_backend>> load(const gguf::file& f, const cuda_backend_options& opt);
  static backend_factory factory(std::shared_ptr<const gguf::file> f, cuda_backend_options opt);
  ~cuda_backend() override;

  const hparams& params() const override;
  std::string device_name() const override;
  kv_store& kv() override;
  status<> forward(std::span<const batch_seq> batch, batch_logits& out) override;
  //! The same weights and pool on the same device, with a stream and scratch of its own.
  result<std::unique_ptr<backend>> share() override;

  //! Bytes of weights on the device.
  size_t weight_bytes() const;
  int device() const;

  struct state;

 private:
  explicit cuda_backend(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

}  // namespace hearth
