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

namespace {

// Both kinds of buffer grow the same way: at least `bytes` (a reservation of 0 still holds one
// byte, so a pointer is never null once reserved), the old memory freed first, contents lost.
template <class Alloc, class Free>
status<> grow(void*& p, size_t& n, size_t bytes, Alloc alloc, Free release, const std::string& what) {
  if (bytes <= n && p) return {};
  if (p) release(p);
  p = nullptr;
  n = 0;
  if (auto st = check(alloc(&p, bytes == 0 ? 1 : bytes), what); !st) {
    p = nullptr;
    return st;
  }
  n = bytes;
  return {};
}

}  // namespace

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
  return grow(
      p_, n_, bytes, [](void** p, size_t n) { return cudaMalloc(p, n); }, [](void* p) { cudaFree(p); },
      "allocating " + std::to_string(bytes) + " bytes for " + what);
}

pinned_buffer::~pinned_buffer() {
  if (p_) cudaFreeHost(p_);
}

status<> pinned_buffer::reserve(size_t bytes, const std::string& what) {
  return grow(
      p_, n_, bytes, [](void** p, size_t n) { return cudaMallocHost(p, n); },
      [](void* p) { cudaFreeHost(p); }, "pinning " + std::to_string(bytes) + " host bytes for " + what);
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
