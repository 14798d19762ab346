// The CPU backend's side of the backend contract (backend_contract.cpp runs it over the CPU
// backend), and what only the CPU backend has: greedy output that does not depend on the thread
// count, and a warm-up at load that leaves the KV pool untouched.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "backend_contract.hpp"
#include "cpu_backend_loader.hpp"
#include "kernel_threads_scope.hpp"
#include "kernels/parallel.hpp"
#include "model/model_maker.hpp"

using namespace hearth;

const std::vector<test::backend_under_test>& test::backends_under_test() {
  static const std::vector<backend_under_test> b{{"cpu", cpu_backend_loader()}};
  return b;
}

namespace {

constexpr model_preset mha{"mha", 64, 2, 4, 4, 128, 600};

token_id argmax(std::span<const float> x) {
  return static_cast<token_id>(std::max_element(x.begin(), x.end()) - x.begin());
}

}  // namespace

TEST_CASE("greedy generation does not depend on the thread count", "[cpu_backend]") {
  const auto m = test::make_test_model(make_options{mha, tensor_type::bf16, 11, tokenizer_kind::bpe, 512},
                                       make_vocab(make_options{mha, tensor_type::f32, 1}));
  std::mt19937_64 rng(5);
  const auto prompt = test::random_tokens(24, 600, rng);
  auto last_logits = [](backend& be, std::span<const token_id> tokens, uint32_t start,
                        std::span<const uint32_t> blocks, batch_logits& out) {
    const batch_seq seq{tokens, start, blocks};
    REQUIRE(be.forward({&seq, 1}, out).ok());
    return out.last(0);
  };
  const test::kernel_threads_scope restore_threads;
  auto run = [&](int threads) {
    set_kernel_threads(threads);
    auto be = test::cpu_backend_loader()(m->file, {.compute = compute_type::bf16, .kv = kv_dtype::bf16});
    std::vector<uint32_t> blocks(4);
    std::iota(blocks.begin(), blocks.end(), 0);
    batch_logits out;
    std::vector<token_id> gen{argmax(last_logits(*be, prompt, 0, blocks, out))};
    for (uint32_t pos = 24; gen.size() < 16; ++pos)
      gen.push_back(argmax(last_logits(*be, {&gen.back(), 1}, pos, blocks, out)));
    return gen;
  };
  const auto one = run(1);
  CHECK(run(2) == one);
  CHECK(run(1) == one);
}

TEST_CASE("loading warms the model up and leaves the KV pool as it was, all zeros", "[cpu_backend]") {
  const auto m = test::make_test_model(make_options{mha, tensor_type::q8_0, 3, tokenizer_kind::bpe, 512},
                                       make_vocab(make_options{mha, tensor_type::f32, 1}));
  for (const uint32_t block_size : {16u, 1u}) {  // and a pool of one block of one position
    auto be = cpu_backend::load(
        m->file,
        {.compute = compute_type::bf16, .block_size = block_size, .kv_tokens = block_size == 1 ? 1u : 64u});
    REQUIRE(be.ok());
    const kv_pool& pool = (*be)->kv();
    for (uint32_t b = 0; b < pool.n_blocks(); ++b) {
      const auto bytes = pool.block(b);
      CHECK(std::all_of(bytes.begin(), bytes.end(), [](std::byte x) { return x == std::byte{0}; }));
    }
  }
}
