// The buffers behind weights and the KV pool: zeroed, aligned, and from 2 MiB up a mapping of
// their own between two inaccessible guard pages, gone once freed.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

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
