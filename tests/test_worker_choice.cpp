// Placement across data-parallel workers (core/worker_choice.hpp), by hand-computed costs.
#include <catch2/catch.hpp>

#include <vector>

#include "core/worker_choice.hpp"

using namespace hearth;

namespace {

worker_load holding(uint64_t prefill, uint64_t decode, uint32_t seqs) {
  return worker_load{.held = {prefill, decode, seqs}};
}

}  // namespace

TEST_CASE("placement: before any fit, the worker holding the fewest tokens", "[worker_choice]") {
  std::vector<worker_load> w = {holding(500, 100, 3), holding(200, 100, 3), holding(200, 150, 1)};
  CHECK(choose_worker(w, 100, 50) == 1);
  w[1].available = false;
  CHECK(choose_worker(w, 100, 50) == 2);
  w[2].fits = false;
  CHECK(choose_worker(w, 100, 50) == 0);
  w[0].available = false;
  CHECK(choose_worker(w, 100, 50) == std::nullopt);
  CHECK(choose_worker({}, 1, 1) == std::nullopt);
}

TEST_CASE("placement: equal work ties to fewer sequences, then the first", "[worker_choice]") {
  std::vector<worker_load> w = {holding(100, 0, 4), holding(100, 0, 2), holding(100, 0, 2)};
  CHECK(choose_worker(w, 10, 10) == 1);
}

TEST_CASE("placement: a prompt goes where its prefix is cached while that is not much busier",
          "[worker_choice]") {
  // 1000-token document cached on worker 1, which holds 300 tokens more: 300 < 1000 saved.
  std::vector<worker_load> w = {holding(0, 0, 0), holding(300, 0, 2)};
  w[1].cached_tokens = 1000;
  CHECK(choose_worker(w, 1010, 20) == 1);
  w[1].held.prefill_tokens = 1100;  // busier by more than the cache saves
  CHECK(choose_worker(w, 1010, 20) == 0);
  w[1].cached_tokens = 5000;  // more than the prompt: it saves the prompt, no more
  CHECK(choose_worker(w, 1010, 20) == 0);
}

TEST_CASE("placement: fitted speeds weigh each worker's tokens by its own costs", "[worker_choice]") {
  // Worker 0 is four times as fast per prefill token and twice per decode token.
  std::vector<worker_load> w = {holding(2000, 100, 4), holding(400, 100, 4)};
  w[0].speed = {.base_ms = 30, .per_token_ms = 0.25, .per_seq_ms = 0.75};
  w[1].speed = {.base_ms = 5, .per_token_ms = 1.0, .per_seq_ms = 1.0};
  // 0: (2000 + 100) * 0.25 + (100 + 10) * 1.0 = 635; 1: (400 + 100) * 1 + 110 * 2 = 720.
  CHECK(choose_worker(w, 100, 10) == 0);
  w[0].held.prefill_tokens = 2400;  // 735 > 720
  CHECK(choose_worker(w, 100, 10) == 1);
  // A worker without a fit yet: every token costs the same everywhere (2510 + 110 > 500 + 110).
  w[1].speed = {};
  CHECK(choose_worker(w, 100, 10) == 1);
}
