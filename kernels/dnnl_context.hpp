#pragma once
// oneDNN's state, internal to kernels/: one CPU engine for the process, and per thread a stream
// (oneDNN streams are not meant to be shared between threads) and a cache of matmul primitives
// keyed by shape, so the layers of a model that share a shape share them. Per thread because a
// primitive must run on the thread that created it: Debian's oneDNN is built without
// DNNL_ENABLE_CONCURRENT_EXEC, so its primitives share one scratchpad per thread, sized when they
// are created; the two workers of a disaggregated pair, running the same shapes at once, gave
// wrong tokens when they shared primitives (one request in 17 runs of test_engine's concurrency
// test, its first token already wrong).

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <memory>

namespace hearth::dnnl_ctx {

//! The process's CPU engine (created on first use).
const dnnl::engine& engine();
//! The calling thread's stream on engine() (created on the thread's first use).
dnnl::stream& stream();

//! Everything that selects one matmul primitive. `layout` numbers a weights memory desc
//! (intern_layout), which fixes n_in, n_out and the data type; `threads` is the OpenMP thread
//! count of the creating thread, which oneDNN's kernels bake in when they partition the work;
//! `ldc` the distance of the output's rows (n, or n_out for a column slice).
struct matmul_key {
  uint32_t layout;
  uint32_t m;
  bool bias;
  int threads;
  uint32_t ldc;
  bool operator==(const matmul_key&) const = default;
};

//! A small number standing for a weights memory desc: equal descs get the same number.
uint32_t intern_layout(const dnnl::memory::desc& weights);

//! The calling thread's cached primitive for key, or nullptr when it has none yet.
std::shared_ptr<const dnnl::matmul> find_matmul(const matmul_key& key);
//! Stores a primitive the calling thread created under key in that thread's cache (evicting the
//! least recently used beyond the capacity) and returns it.
std::shared_ptr<const dnnl::matmul> store_matmul(const matmul_key& key, dnnl::matmul prim);

}  // namespace hearth::dnnl_ctx
