#include "kernels/big_alloc.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

namespace hearth {

std::byte* alloc_zeroed_big(size_t bytes) {
  constexpr size_t huge = size_t{2} << 20;
  const size_t align = bytes >= huge ? huge : 64;
  const size_t padded =
      std::max(align, (bytes + align - 1) / align * align);  // aligned_alloc wants a multiple
  auto* p = static_cast<std::byte*>(std::aligned_alloc(align, padded));
  if (!p) return nullptr;
  // Before the first touch, so that the faults that follow map huge pages. Only a hint: where THP
  // is off, madvise fails and the memory works as before.
  if (align == huge) madvise(p, padded, MADV_HUGEPAGE);
  std::memset(p, 0, padded);
  return p;
}

}  // namespace hearth
