// Policies are pure functions over a snapshot: checked here without any engine.
#include <catch2/catch.hpp>

#include "policies/policy.hpp"
#include "policies/priority.hpp"

using namespace hearth;

namespace {

// The household used below: index 0 voice (interactive), 1 docs (standard), 2 nightly (background).
const tenant_view household[] = {
    {.name = "voice", .cls = tenant_class::interactive, .weight = 2, .ttft_ms = 300, .itl_ms = 100},
    {.name = "docs", .cls = tenant_class::standard, .weight = 1, .ttft_ms = 2000, .itl_ms = 0},
    {.name = "nightly", .cls = tenant_class::background, .weight = 1},
};

request_view req(request_id id, uint32_t tenant, double arrival_s) {
  return {.id = id, .tenant_index = tenant, .arrival_s = arrival_s};
}

}  // namespace

TEST_CASE("the registry knows every policy by name", "[policies]") {
  for (const std::string& name : policy_names()) {
    const auto p = make_policy(name);
    REQUIRE(p);
    CHECK(p->name() == name);
  }
  CHECK(make_policy("no-such-policy") == nullptr);
}

TEST_CASE("without tenants every policy orders by arrival and preempts the latest arrival", "[policies]") {
  const request_view waiting[] = {{.id = 7, .arrival_s = 3.0}, {.id = 2, .arrival_s = 1.0}, {.id = 5, .arrival_s = 1.0}};
  const request_view running[] = {{.id = 1, .arrival_s = 0.5}, {.id = 9, .arrival_s = 4.0}, {.id = 4, .arrival_s = 2.0}};
  const policy_snapshot s{waiting, running, 5.0};
  const uint32_t all[] = {0, 1, 2}, some[] = {0, 2};
  for (const std::string& name : policy_names()) {
    INFO(name);
    const auto p = make_policy(name);
    CHECK(p->order_waiting(s) == std::vector<uint32_t>{1, 2, 0});
    CHECK(p->pick_victim(s, all) == 1);
    CHECK(p->pick_victim(s, some) == 2);
  }
}

TEST_CASE("priority serves classes in order, FCFS within a class", "[policies]") {
  const auto p = make_policy("priority");
  const request_view waiting[] = {req(1, 2, 9.0), req(2, 1, 9.5), req(3, 0, 9.9), req(4, 1, 9.2), req(5, 0, 9.8)};
  const policy_snapshot s{.waiting = waiting, .running = {}, .now_s = 10.0, .tenants = household};
  CHECK(p->order_waiting(s) == std::vector<uint32_t>{4, 2, 3, 1, 0});
}

TEST_CASE("priority ages waiting requests so background work never starves", "[policies]") {
  const priority_policy p(10.0);
  // A background request that has waited just over two aging periods more than a fresh
  // interactive one goes first; just under, it still waits.
  const request_view waiting[] = {req(1, 2, 0.0), req(2, 0, 20.5)};
  policy_snapshot s{.waiting = waiting, .running = {}, .now_s = 20.5, .tenants = household};
  CHECK(p.order_waiting(s) == std::vector<uint32_t>{0, 1});
  const request_view later[] = {req(1, 2, 0.0), req(2, 0, 19.5)};
  s.waiting = later;
  s.now_s = 19.5;
  CHECK(p.order_waiting(s) == std::vector<uint32_t>{1, 0});
}

TEST_CASE("priority preempts the lowest class, latest arrival first", "[policies]") {
  const auto p = make_policy("priority");
  const request_view running[] = {req(1, 2, 1.0), req(2, 0, 5.0), req(3, 2, 3.0), req(4, 1, 6.0)};
  const policy_snapshot s{.waiting = {}, .running = running, .now_s = 10.0, .tenants = household};
  const uint32_t all[] = {0, 1, 2, 3}, no_background[] = {1, 3};
  CHECK(p->pick_victim(s, all) == 2);
  CHECK(p->pick_victim(s, no_background) == 3);
}
