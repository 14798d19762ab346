#pragma once
// The paged KV pool in device memory, laid out as the host pool (kernels/kv_store.hpp), so a
// block moves between devices and host as one contiguous copy.

#include <memory>
#include <mutex>

#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/kv_store.hpp"

namespace hearth::cuda {

class kv_pool_device final : public kv_store {
 public:
  //! n_blocks zeroed blocks on `device`; errc::limit_exceeded when they do not fit.
  static result<std::unique_ptr<kv_pool_device>> create(const kv_layout& layout, uint32_t n_blocks,
                                                        int device);

  const kv_layout& layout() const override { return layout_; }
  uint32_t n_blocks() const override { return n_blocks_; }
  //! Through pinned staging on the pool's own stream: safe beside a forward on another stream
  //! that writes other blocks.
  status<> read_blocks(std::span<const uint32_t> ids, std::span<std::byte> out) const override;
  status<> write_blocks(std::span<const uint32_t> ids, std::span<const std::byte> in) override;

  void* data() const { return mem_.get(); }

 private:
  kv_pool_device(const kv_layout& layout, uint32_t n_blocks, int device, device_buffer mem, stream s)
      : layout_(layout), n_blocks_(n_blocks), device_(device), mem_(std::move(mem)), copies_(std::move(s)) {}
  //! On the calling thread (a worker's, not the pool's owner's): the pool's device.
  status<> select_device() const;

  kv_layout layout_;
  uint32_t n_blocks_;
  int device_;
  device_buffer mem_;
  stream copies_;
  mutable std::mutex copying_;  // one copy at a time through the staging buffer
  mutable pinned_buffer staging_;
};

}  // namespace hearth::cuda
