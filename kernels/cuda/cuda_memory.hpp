#pragma once
// CUDA runtime resources as owned values, and its errors as typed ones: nothing of the backend
// leaks a device allocation, a pinned page or a stream, whichever way a load or a step fails.

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "common/result.hpp"

namespace hearth::cuda {

//! An error naming `what` and CUDA's own words when e is one (limit_exceeded: out of memory;
//! unsupported: no device or driver; io: the rest), else ok.
status<> check(cudaError_t e, const std::string& what);

//! Device memory, `size()` bytes.
class device_buffer {
 public:
  device_buffer() = default;
  static result<device_buffer> create(size_t bytes, const std::string& what);
  device_buffer(device_buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  device_buffer& operator=(device_buffer&& o) noexcept;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer();

  //! At least `bytes`, reallocated (contents lost) when smaller.
  status<> reserve(size_t bytes, const std::string& what);
  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t size() const { return n_; }
  bool empty() const { return p_ == nullptr; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

//! Page-locked host memory, for copies the device runs asynchronously.
class pinned_buffer {
 public:
  pinned_buffer() = default;
  pinned_buffer(pinned_buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  pinned_buffer& operator=(pinned_buffer&&) = delete;
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  ~pinned_buffer();

  status<> reserve(size_t bytes, const std::string& what);
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

//! A stream that never waits for the legacy default stream (the pool's copies run beside steps).
class stream {
 public:
  static result<stream> create();
  stream(stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  stream& operator=(stream&&) = delete;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream();

  cudaStream_t get() const { return s_; }

 private:
  explicit stream(cudaStream_t s) : s_(s) {}
  cudaStream_t s_ = nullptr;
};

}  // namespace hearth::cuda
