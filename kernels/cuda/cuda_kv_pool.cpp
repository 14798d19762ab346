#include "kernels/cuda/cuda_kv_pool.hpp"

#include <cstring>
#include <string>

namespace hearth::cuda {

result<std::unique_ptr<kv_pool_device>> kv_pool_device::create(const kv_layout& layout, uint32_t n_blocks,
                                                               int device) {
  if (auto st = check(cudaSetDevice(device), "selecting device " + std::to_string(device)); !st)
    return st.error();
  const size_t bytes = size_t{n_blocks} * layout.block_bytes();
  auto mem = device_buffer::create(bytes, "the KV pool (" + std::to_string(n_blocks) + " blocks)");
  if (!mem) return mem.error();
  auto s = stream::create();
  if (!s) return s.error();
  // On the pool's own stream, finished before anyone reads: cudaMemset would not wait.
  if (auto st = check(cudaMemsetAsync(mem->get(), 0, bytes, s->get()), "zeroing the KV pool"); !st)
    return st.error();
  if (auto st = check(cudaStreamSynchronize(s->get()), "zeroing the KV pool"); !st) return st.error();
  return std::unique_ptr<kv_pool_device>(
      new kv_pool_device(layout, n_blocks, device, std::move(*mem), std::move(*s)));
}

status<> kv_pool_device::select_device() const {
  return check(cudaSetDevice(device_), "selecting device " + std::to_string(device_));
}

status<> kv_pool_device::read_blocks(std::span<const uint32_t> ids, std::span<std::byte> out) const {
  if (auto st = check_block_copy(layout_, n_blocks_, ids, out.size()); !st) return st;
  if (auto st = select_device(); !st) return st;
  const std::lock_guard lock(copying_);
  if (auto st = staging_.reserve(out.size(), "KV blocks copied out"); !st) return st;
  const size_t n = layout_.block_bytes();
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto* from = static_cast<const std::byte*>(mem_.get()) + size_t{ids[i]} * n;
    if (auto st = check(
            cudaMemcpyAsync(staging_.as<std::byte>() + i * n, from, n, cudaMemcpyDeviceToHost, copies_.get()),
            "copying a KV block out");
        !st)
      return st;
  }
  if (auto st = check(cudaStreamSynchronize(copies_.get()), "copying KV blocks out"); !st) return st;
  std::memcpy(out.data(), staging_.as<std::byte>(), out.size());
  return {};
}

status<> kv_pool_device::write_blocks(std::span<const uint32_t> ids, std::span<const std::byte> in) {
  if (auto st = check_block_copy(layout_, n_blocks_, ids, in.size()); !st) return st;
  if (auto st = select_device(); !st) return st;
  const std::lock_guard lock(copying_);
  if (auto st = staging_.reserve(in.size(), "KV blocks copied in"); !st) return st;
  std::memcpy(staging_.as<std::byte>(), in.data(), in.size());
  const size_t n = layout_.block_bytes();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto* to = static_cast<std::byte*>(mem_.get()) + size_t{ids[i]} * n;
    if (auto st = check(
            cudaMemcpyAsync(to, staging_.as<std::byte>() + i * n, n, cudaMemcpyHostToDevice, copies_.get()),
            "copying a KV block in");
        !st)
      return st;
  }
  return check(cudaStreamSynchronize(copies_.get()), "copying KV blocks in");
}

}  // namespace hearth::cuda
