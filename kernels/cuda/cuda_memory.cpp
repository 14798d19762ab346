#include "kernels/cuda/cuda_memory.hpp"

#include <utility>

namespace hearth::cuda {

status<> check(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return {};
  std::string m = "cuda: ";
  m += what;
  m += ": ";
  m += cudaGetErrorString(e);
  // Out of memory is a size the caller chose; no device or driver, a machine without one; the
  // rest is the device refusing, as the operating system refuses a file.
  const errc code = e == cudaErrorMemoryAllocation                               ? errc::limit_exceeded
                    : e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? errc::unsupported
                                                                                 : errc::io;
  return error{code, std::move(m)};
}

result<device_buffer> device_buffer::create(size_t bytes, const std::string& what) {
  device_buffer b;
  if (auto st = b.reserve(bytes, what); !st) return st.error();
  return b;
}

device_buffer& device_buffer::operator=(device_buffer&& o) noexcept {
  std::swap(p_, o.p_);
  std::swap(n_, o.n_);
  return *this;
}

device_buffer::~device_buffer() {
  if (p_) cudaFree(p_);
}

status<> device_buffer::reserve(size_t bytes, const std::string& what) {
  if (bytes <= n_ && p_) return {};
  if (p_) cudaFree(p_);
  p_ = nullptr;
  n_ = 0;
  if (auto st = check(cudaMalloc(&p_, bytes == 0 ? 1 : bytes),
                      "allocating " + std::to_string(bytes) + " bytes for " + what);
      !st) {
    p_ = nullptr;
    return st;
  }
  n_ = bytes;
  return {};
}

pinned_buffer::~pinned_buffer() {
  if (p_) cudaFreeHost(p_);
}

status<> pinned_buffer::reserve(size_t bytes, const std::string& what) {
  if (bytes <= n_ && p_) return {};
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  n_ = 0;
  if (auto st = check(cudaMallocHost(&p_, bytes == 0 ? 1 : bytes),
                      "pinning " + std::to_string(bytes) + " host bytes for " + what);
      !st) {
    p_ = nullptr;
    return st;
  }
  n_ = bytes;
  return {};
}

result<stream> stream::create() {
  cudaStream_t s = nullptr;
  if (auto st = check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream"); !st)
    return st.error();
  return stream(s);
}

stream::~stream() {
  if (s_) cudaStreamDestroy(s_);
}

}  // namespace hearth::cuda
