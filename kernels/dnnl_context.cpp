#include "kernels/dnnl_context.hpp"

#include <functional>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hearth::dnnl_ctx {
namespace {

// A model has a handful of weight shapes, each used with batch sizes 1..max rows per call
// (matmul.cpp): this bounds the primitives kept (each holds its JIT code) while leaving room
// for two models' shapes at every common batch size.
constexpr size_t cache_capacity = 1024;

struct key_hash {
  size_t operator()(const matmul_key& k) const {
    uint64_t h = (uint64_t{k.layout} << 32) ^ (uint64_t{k.m} << 8) ^ (uint64_t(k.threads) << 1) ^ k.bias ^
                 (uint64_t{k.ldc} << 40);
    return std::hash<uint64_t>{}(h);
  }
};

using entry = std::pair<matmul_key, std::shared_ptr<const dnnl::matmul>>;

struct matmul_cache {
  std::list<entry> lru;  // most recently used first
  std::unordered_map<matmul_key, std::list<entry>::iterator, key_hash> index;
};

matmul_cache& cache() {
  thread_local matmul_cache c;
  return c;
}

struct layout_table {
  std::mutex mutex;
  std::vector<dnnl::memory::desc> layouts;
};

layout_table& layouts() {
  static layout_table t;
  return t;
}

}  // namespace

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

uint32_t intern_layout(const dnnl::memory::desc& weights) {
  auto& t = layouts();
  std::lock_guard lock(t.mutex);
  for (size_t i = 0; i < t.layouts.size(); ++i)
    if (t.layouts[i] == weights) return static_cast<uint32_t>(i);
  t.layouts.push_back(weights);
  return static_cast<uint32_t>(t.layouts.size() - 1);
}

std::shared_ptr<const dnnl::matmul> find_matmul(const matmul_key& key) {
  auto& c = cache();
  auto it = c.index.find(key);
  if (it == c.index.end()) return nullptr;
  c.lru.splice(c.lru.begin(), c.lru, it->second);
  return it->second->second;
}

std::shared_ptr<const dnnl::matmul> store_matmul(const matmul_key& key, dnnl::matmul prim) {
  auto made = std::make_shared<const dnnl::matmul>(std::move(prim));
  auto& c = cache();
  if (auto it = c.index.find(key); it != c.index.end()) return it->second->second;
  c.lru.emplace_front(key, std::move(made));
  c.index.emplace(key, c.lru.begin());
  if (c.lru.size() > cache_capacity) {
    // Callers hold their own shared_ptr while executing, so evicting never frees a running one.
    c.index.erase(c.lru.back().first);
    c.lru.pop_back();
  }
  return c.lru.front().second;
}

}  // namespace hearth::dnnl_ctx
