#pragma once
// Large, long-lived buffers of kernels/ (bf16 weights, the KV pool), internal to kernels/.

#include <cstddef>

namespace hearth {

//! `bytes` of zeroed memory, 64-byte aligned, freed with std::free; nullptr when out of memory.
//! From 2 MiB up it is 2 MiB aligned and advised for transparent huge pages (Debian's default
//! THP mode is madvise): decode streams the weights and walks KV tiles 2 KiB at a time, and with
//! 4 KiB pages every page or tile is a TLB miss (docs/performance.md).
std::byte* alloc_zeroed_big(size_t bytes);

}  // namespace hearth
