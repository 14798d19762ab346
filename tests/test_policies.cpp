// Policies are pure functions over a snapshot: checked here without any engine.
#include <catch2/catch.hpp>

#include "policies/policy.hpp"

using namespace hearth;

TEST_CASE("fcfs orders by arrival and preempts the latest arrival", "[policies]") {
  auto p = make_policy("fcfs");
  REQUIRE(p);
  CHECK(p->name() == "fcfs");
  const request_view waiting[] = {{.id = 7, .arrival_s = 3.0}, {.id = 2, .arrival_s = 1.0}, {.id = 5, .arrival_s = 1.0}};
  const request_view running[] = {{.id = 1, .arrival_s = 0.5}, {.id = 9, .arrival_s = 4.0}, {.id = 4, .arrival_s = 2.0}};
  const policy_snapshot s{waiting, running, 5.0};
  CHECK(p->order_waiting(s) == std::vector<uint32_t>{1, 2, 0});
  const uint32_t all[] = {0, 1, 2}, some[] = {0, 2};
  CHECK(p->pick_victim(s, all) == 1);
  CHECK(p->pick_victim(s, some) == 2);
  CHECK(make_policy("no-such-policy") == nullptr);
}
