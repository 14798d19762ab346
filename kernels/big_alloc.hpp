#pragma once
// Large, long-lived buffers of kernels/ (weights in bf16 or in oneDNN's layouts, the KV pool),
// internal to kernels/.

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace hearth {

//! `bytes` of zeroed memory, 64-byte aligned, freed with std::free; nullptr when out of memory.
//! From 2 MiB up it is 2 MiB aligned and advised for transparent huge pages (Debian's default
//! THP mode is madvise): decode streams the weights and walks KV tiles 2 KiB at a time, and with
//! 4 KiB pages every page or tile is a TLB miss (docs/performance.md).
std::byte* alloc_zeroed_big(size_t bytes);

//! Frees an alloc_zeroed_big buffer, whatever its element type.
struct big_free {
  void operator()(void* p) const { std::free(p); }
};
using big_buffer = std::unique_ptr<std::byte[], big_free>;

}  // namespace hearth
