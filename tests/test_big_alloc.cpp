// The buffers behind weights and the KV pool: zeroed, aligned, and from 2 MiB up a mapping of
// their own between two inaccessible guard pages, gone once freed, that a thread can fault in.
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/big_alloc.hpp"

using namespace hearth;

namespace {

constexpr size_t two_mib = size_t{2} << 20;

//! The permissions ("rw-p", "---p") of the mapping holding `addr` in /proc/self/maps; empty when
//! no mapping holds it.
std::string perms_at(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms;
    in >> range >> perms;
    const auto dash = range.find('-');
    const uintptr_t from = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t to = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (a >= from && a < to) return perms;
  }
  return "";
}

bool all_zero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

size_t page_bytes() {
  return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

//! How many pages of [p, p + n) are resident.
size_t resident_pages(const std::byte* p, size_t n) {
  std::vector<unsigned char> in((n + page_bytes() - 1) / page_bytes());
  REQUIRE(mincore(const_cast<std::byte*>(p), n, in.data()) == 0);
  return static_cast<size_t>(
      std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

}  // namespace

TEST_CASE("small big_alloc buffers are zeroed and 64-byte aligned", "[kernels][big_alloc]") {
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{100}, two_mib - 1}) {
    CAPTURE(bytes);
    const auto b = alloc_zeroed_big(bytes);
    REQUIRE(b);
    CHECK(reinterpret_cast<uintptr_t>(b.get()) % 64 == 0);
    CHECK(all_zero(b.get(), bytes));
  }
}

TEST_CASE("large big_alloc buffers are mappings of their own between guard pages", "[kernels][big_alloc]") {
  const size_t bytes = 5 * two_mib + 3;  // padded to 6 * 2 MiB
  const std::byte* start = nullptr;
  {
    auto b = alloc_zeroed_big(bytes);
    REQUIRE(b);
    start = b.get();
    CHECK(reinterpret_cast<uintptr_t>(start) % two_mib == 0);
    CHECK(all_zero(b.get(), bytes));
    for (size_t i = 0; i < bytes; i += 4096) b[i] = std::byte{1};  // writable end to end
    b[bytes - 1] = std::byte{1};
    CHECK(perms_at(start).starts_with("rw"));
    CHECK(perms_at(start + 6 * two_mib - 1).starts_with("rw"));
    CHECK(perms_at(start - 1) == "---p");
    CHECK(perms_at(start + 6 * two_mib) == "---p");
  }
  // Freed: the buffer and both guard pages are unmapped, and a new buffer is zeroed again.
  CHECK(perms_at(start).empty());
  CHECK(perms_at(start - 1).empty());
  CHECK(perms_at(start + 6 * two_mib).empty());
  const auto again = alloc_zeroed_big<uint16_t>(bytes);
  REQUIRE(again);
  CHECK(all_zero(reinterpret_cast<const std::byte*>(again.get()), bytes));
}

TEST_CASE("populate_in_background faults a large buffer in and keeps what it holds", "[kernels][big_alloc]") {
  const size_t bytes = 4 * two_mib;
  auto b = alloc_zeroed_big(bytes);
  REQUIRE(b);
  if (madvise(b.get(), page_bytes(), MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    WARN("this kernel has no MADV_POPULATE_WRITE (before Linux 5.14): pages fault in as written");
    return;
  }
  CHECK(resident_pages(b.get(), bytes) < bytes / page_bytes());
  b[2 * two_mib + 5] = std::byte{7};  // written before and while it runs: kept
  {
    std::jthread t = populate_in_background(b.get(), bytes);
    REQUIRE(t.joinable());
    b[3 * two_mib + 9] = std::byte{9};
    t.join();  // to the end: only its destructor asks it to stop
  }
  CHECK(resident_pages(b.get(), bytes) == bytes / page_bytes());
  CHECK(b[2 * two_mib + 5] == std::byte{7});
  CHECK(b[3 * two_mib + 9] == std::byte{9});
  b[2 * two_mib + 5] = b[3 * two_mib + 9] = std::byte{0};
  CHECK(all_zero(b.get(), bytes));
  // Small buffers are zeroed, so touched, at allocation: no thread.
  const auto small = alloc_zeroed_big(100);
  CHECK_FALSE(populate_in_background(small.get(), 100).joinable());
}
