// The block manager alone: reference counts, the prefix cache's chained keys and salts, LRU eviction.
#include <catch2/catch.hpp>

#include <numeric>

#include "core/kv_cache.hpp"

using namespace hearth;

namespace {

std::vector<token_id> iota_tokens(size_t n, token_id first = 0) {
  std::vector<token_id> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Allocates blocks for `tokens` and offers every full one, as the scheduler does after computing.
std::vector<uint32_t> fill(kv_cache& kv, std::span<const token_id> tokens, uint64_t salt) {
  std::vector<uint32_t> table;
  uint64_t key = kv_cache::root_key;
  for (size_t i = 0; i * kv.block_size() < tokens.size(); ++i) {
    table.push_back(*kv.allocate());
    if ((i + 1) * kv.block_size() <= tokens.size()) {
      key = kv.offer(table.back(), key, salt, tokens.subspan(i * kv.block_size(), kv.block_size()));
    }
  }
  return table;
}

}  // namespace

TEST_CASE("blocks are handed out once and come back on release", "[kv_cache]") {
  kv_cache kv(4, 16);
  std::vector<uint32_t> got;
  while (auto b = kv.allocate()) got.push_back(*b);
  CHECK(got.size() == 4);
  CHECK(kv.available() == 0);
  kv.release(got[2]);
  CHECK(kv.allocate() == got[2]);
  kv.release(got);
  CHECK(kv.stats().used == 0);
  CHECK(kv.available() == 4);
}

TEST_CASE("a released table's blocks come back in its order, and its cached tail is evicted before its head",
          "[kv_cache]") {
  kv_cache kv(8, 2);
  std::vector<uint32_t> first;
  for (int i = 0; i < 4; ++i) first.push_back(*kv.allocate());
  CHECK(first == std::vector<uint32_t>{0, 1, 2, 3});
  kv.release(first);
  std::vector<uint32_t> again;
  for (int i = 0; i < 4; ++i) again.push_back(*kv.allocate());
  CHECK(again == first);
  kv.release(again);

  kv_cache cached(3, 2);
  const auto a = iota_tokens(6);  // three full blocks, all offered
  const auto table = fill(cached, a, 0);
  cached.release(table);
  CHECK(cached.stats().cached == 3);
  REQUIRE(cached.allocate() == table[2]);  // the tail goes first
  CHECK(cached.match_prefix(a, 0, 6).blocks == std::vector<uint32_t>{table[0], table[1]});
}

TEST_CASE("the prefix cache matches whole chained blocks of the same salt", "[kv_cache]") {
  kv_cache kv(16, 4);
  const auto a = iota_tokens(10);  // two full blocks and a partial one
  const auto table = fill(kv, a, 1);
  kv.release(table);
  CHECK(kv.stats().cached == 2);
  CHECK(kv.available() == 16);

  auto m = kv.match_prefix(a, 1, 10);
  CHECK(m.blocks == std::vector<uint32_t>{table[0], table[1]});
  kv.release(m.blocks);
  CHECK(kv.match_prefix(a, 2, 10).blocks.empty());  // another salt
  auto first_only = kv.match_prefix(a, 1, 1);
  CHECK(first_only.blocks.size() == 1);
  kv.release(first_only.blocks);
  // Same second block, different first: the chain does not match past the first block.
  auto b = a;
  b[0] = 99;
  CHECK(kv.match_prefix(b, 1, 10).blocks.empty());
  CHECK(kv.stats().hits == 3);
}

TEST_CASE("shared blocks count references, and unreferenced cached blocks are evicted oldest first",
          "[kv_cache]") {
  kv_cache kv(4, 2);
  const auto a = iota_tokens(4), b = iota_tokens(4, 100);
  const auto ta = fill(kv, a, 0);
  auto m = kv.match_prefix(a, 0, 2);  // a second sequence shares both blocks
  kv.release(ta);
  CHECK(kv.stats().used == 2);  // still referenced by the second
  kv.release(m.blocks);
  const auto tb = fill(kv, b, 0);  // takes the two free blocks
  kv.release(tb);
  CHECK(kv.stats().cached == 4);
  // A new allocation evicts the least recently released: a's blocks.
  const auto x = kv.allocate();
  REQUIRE(x);
  CHECK((*x == ta[0] || *x == ta[1]));
  CHECK(kv.stats().evictions == 1);
  CHECK(kv.match_prefix(b, 0, 2).blocks.size() == 2);
}
