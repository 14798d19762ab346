#pragma once
// Large, long-lived buffers of kernels/ (weights in bf16 or in oneDNN's layouts, the KV pool),
// internal to kernels/.

#include <cstddef>
#include <memory>
#include <thread>

namespace hearth {

//! Frees an alloc_zeroed_big buffer of `bytes` (the size asked for), whatever its element type.
struct big_free {
  size_t bytes = 0;
  void operator()(void* p) const;
};
template <class T>
using big_array = std::unique_ptr<T[], big_free>;
using big_buffer = big_array<std::byte>;

//! What alloc_zeroed_big holds, which only big_free{bytes} frees: `bytes` of zeroed memory,
//! 64-byte aligned; nullptr when out of memory. From 2 MiB up it is a mapping of its own, 2 MiB
//! aligned, advised for transparent huge pages (Debian's default THP mode is madvise; decode
//! streams the weights and walks KV tiles 2 KiB at a time, and with 4 KiB pages every page or
//! tile is a TLB miss, docs/performance.md) and zeroed by the kernel page by page as it is first
//! touched.
std::byte* alloc_zeroed_bytes(size_t bytes);

//! A thread, at idle priority, that faults in the pages of an alloc_zeroed_bytes buffer of `bytes`
//! (a mapping of its own) 2 MiB at a time without changing what they hold, for memory that would
//! otherwise be faulted in by the step that first writes it: on a VM a first touch costs about
//! as much as reading the memory 100 times (AMD EPYC Zen 5 VM: 0.4-0.7 GB/s), a ~50-token
//! prompt's fresh KV blocks ~10 ms. Safe beside the buffer's use; its destructor stops it within
//! a chunk. No thread (joinable() false) for a smaller buffer, which is zeroed at allocation.
std::jthread populate_in_background(std::byte* p, size_t bytes);

//! `bytes` of zeroed memory as T[] (empty when out of memory), freed as it was allocated.
template <class T = std::byte>
big_array<T> alloc_zeroed_big(size_t bytes) {
  return big_array<T>(reinterpret_cast<T*>(alloc_zeroed_bytes(bytes)), big_free{bytes});
}

}  // namespace hearth
