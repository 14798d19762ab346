#include "kernels/big_alloc.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

namespace hearth {
namespace {

constexpr size_t huge = size_t{2} << 20;
constexpr size_t small_align = 64;

size_t page_bytes() {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t mapped_bytes(size_t bytes) {
  return (bytes + huge - 1) / huge * huge;
}

// Not memset: a pass over the whole buffer before its first use held up the load by faulting
// in every page of it (the KV pool's too, which populate_in_background now does on idle time)
// and, for weights, wrote memory that the conversion then wrote again. Fresh anonymous pages are
// zero. Each end has an inaccessible guard page, so an access past the buffer faults as it
// would have hit the allocator's redzone under AddressSanitizer.
std::byte* map_zeroed(size_t bytes) {
  const size_t len = mapped_bytes(bytes), page = page_bytes();
  const size_t reserved = len + huge + 2 * page;  // room to align, a guard page on each side
  void* m = mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t start = (base + page + huge - 1) / huge * huge;
  const uintptr_t keep_from = start - page, keep_to = start + len + page;
  if (keep_from > base) munmap(m, keep_from - base);
  if (base + reserved > keep_to) munmap(reinterpret_cast<void*>(keep_to), base + reserved - keep_to);
  auto* p = reinterpret_cast<std::byte*>(start);
  if (mprotect(p, len, PROT_READ | PROT_WRITE) != 0) {
    munmap(reinterpret_cast<void*>(keep_from), keep_to - keep_from);
    return nullptr;
  }
  // Before the first touch, so that the faults that follow map huge pages. Only a hint: where THP
  // is off, madvise fails and the memory works as before.
  madvise(p, len, MADV_HUGEPAGE);
  return p;
}

}  // namespace

std::byte* alloc_zeroed_bytes(size_t bytes) {
  if (bytes >= huge) return map_zeroed(bytes);
  const size_t padded = std::max(small_align, (bytes + small_align - 1) / small_align * small_align);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(small_align, padded));  // wants a multiple
  if (p != nullptr) std::memset(p, 0, padded);
  return p;
}

std::jthread populate_in_background(std::byte* p, size_t bytes) {
  if (p == nullptr || bytes < huge) return {};
  return std::jthread([p, bytes](const std::stop_token& stop) {
    // Only the cores' idle time: a busy worker faults its own pages, as it would have anyway.
    const sched_param none{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &none);
    for (size_t at = 0; at < bytes && !stop.stop_requested(); at += huge) {
      // Kernels before 5.14 lack the advice: the pages are then faulted in as they are written.
      if (madvise(p + at, std::min(huge, bytes - at), MADV_POPULATE_WRITE) != 0) return;
    }
  });
}

void big_free::operator()(void* p) const {
  if (p == nullptr) return;
  if (bytes < huge) return std::free(p);
  const size_t page = page_bytes();
  munmap(static_cast<std::byte*>(p) - page, mapped_bytes(bytes) + 2 * page);
}

}  // namespace hearth
