// Tenants: token-bucket quotas, VTC service counters and tenant tables built in code, pure
// classes checked without an engine.
#include <catch2/catch.hpp>

#include <cmath>

#include "tenants/service_counters.hpp"
#include "tenants/tenant_config.hpp"
#include "tenants/token_bucket.hpp"

using namespace hearth;

TEST_CASE("a token bucket starts full, drains and refills at tokens_per_minute", "[tenants]") {
  token_bucket b(600, 100.0);  // 10 tokens per second, burst 600
  CHECK(b.try_take(500, 100.0));
  CHECK_FALSE(b.try_take(200, 100.0));  // 100 left: refused, nothing taken
  CHECK(b.level(100.0) == Approx(100));
  CHECK(b.retry_after_ms(200, 100.0) == 10000);  // 100 missing at 10 per second
  CHECK_FALSE(b.try_take(200, 109.9));
  CHECK(b.try_take(200, 110.0));
  CHECK(b.level(1000.0) == Approx(600));  // never above one minute's tokens
}

TEST_CASE("try_take succeeds at the moment retry_after_ms names", "[tenants]") {
  token_bucket b(7, 0.0);  // a rate whose refill times are not round numbers
  REQUIRE(b.try_take(7, 0.0));
  for (uint64_t n = 1; n <= 7; ++n) {
    const double at = static_cast<double>(b.retry_after_ms(n, 0.0)) / 1000.0;
    CHECK_FALSE(b.try_take(n, at - 0.002));
    token_bucket copy = b;
    CHECK(copy.try_take(n, at));
  }
}

TEST_CASE("a request above one minute's tokens waits for a full bucket and leaves it in debt", "[tenants]") {
  token_bucket b(60, 0.0);  // 1 token per second
  REQUIRE(b.try_take(30, 0.0));
  CHECK(b.retry_after_ms(100, 0.0) == 30000);  // until full, not until 100 tokens
  CHECK(b.try_take(100, 30.0));
  CHECK(b.level(30.0) == Approx(-40));
  CHECK(b.retry_after_ms(1, 30.0) == 41000);
}

TEST_CASE("a bucket takes back unused tokens up to full, and keeps its level at a new rate", "[tenants]") {
  token_bucket b(600, 0.0);
  REQUIRE(b.try_take(500, 0.0));
  b.give_back(50, 0.0);
  CHECK(b.level(0.0) == Approx(150));
  b.give_back(1000, 0.0);
  CHECK(b.level(0.0) == Approx(600));  // never above one minute's tokens
  REQUIRE(b.try_take(500, 0.0));
  b.set_rate(60, 0.0);  // 100 left, capped at the new burst of 60, refilling at 1 per second
  CHECK(b.level(0.0) == Approx(60));
  CHECK(b.level(10.0) == Approx(60));
  REQUIRE(b.try_take(60, 10.0));
  b.set_rate(6000, 10.0);  // a larger burst does not fill the bucket: 100 per second from 0
  CHECK(b.level(11.0) == Approx(100));
  b.set_rate(0, 11.0);
  CHECK(b.try_take(1'000'000, 11.0));
  b.set_rate(60, 11.0);  // from unlimited: starts full
  CHECK(b.level(11.0) == Approx(60));
}

TEST_CASE("an unlimited bucket always gives", "[tenants]") {
  token_bucket b(0, 0.0);
  CHECK(b.try_take(1'000'000'000, 0.0));
  CHECK(b.retry_after_ms(1'000'000'000, 0.0) == 0);
}

TEST_CASE("a clock that steps back neither refills nor drains the bucket", "[tenants]") {
  token_bucket b(60, 10.0);
  REQUIRE(b.try_take(60, 10.0));
  CHECK(b.level(5.0) == Approx(0));
  CHECK_FALSE(b.try_take(1, 5.0));
  CHECK(b.try_take(1, 11.0));
}

TEST_CASE("service counters charge weighted tokens divided by the tenant's weight", "[tenants]") {
  service_counters c({1.0, 2.0}, {.input = 1, .output = 2});
  c.charge(0, 100, 10);
  c.charge(1, 100, 10);
  CHECK(c.counters()[0] == Approx(120));
  CHECK(c.counters()[1] == Approx(60));
}

TEST_CASE("a tenant that becomes backlogged is lifted to the lowest backlogged counter", "[tenants]") {
  service_counters c({1.0, 1.0, 1.0});
  c.enqueue(0);
  c.enqueue(1);
  c.charge(0, 500, 0);
  c.charge(1, 300, 0);
  c.enqueue(2);  // idle until now: lifted to min(500, 300), not left at 0
  CHECK(c.counters()[2] == Approx(300));
  CHECK(c.backlogged(2));
  // A counter above the floor stays where it is: the lift never lowers.
  c.dequeue(2);
  c.charge(2, 1000, 0);
  c.enqueue(2);
  CHECK(c.counters()[2] == Approx(1300));
  // Joining a tenant that is already backlogged lifts nothing.
  c.enqueue(0);
  CHECK(c.counters()[0] == Approx(500));
}

TEST_CASE("with nobody backlogged a returning tenant is lifted to the last one to leave", "[tenants]") {
  service_counters c({1.0, 1.0});
  c.enqueue(0);
  c.enqueue(1);
  c.charge(0, 800, 0);
  c.dequeue(1);
  c.dequeue(0);  // 0 leaves last, at 800
  c.enqueue(1);
  CHECK(c.counters()[1] == Approx(800));
  CHECK_FALSE(c.backlogged(0));
}

TEST_CASE("a preempted request back in the queue lifts nothing", "[tenants]") {
  service_counters c({1.0, 1.0});
  c.enqueue(0);
  c.charge(0, 500, 0);
  c.enqueue(1);
  c.dequeue(1);  // 1 starts at 500 (lifted) and is served
  c.charge(1, 100, 0);
  c.charge(0, 1000, 0);  // 0 at 1500, 1 at 600
  c.requeue(1);          // preempted: interrupted service, not a new arrival
  CHECK(c.counters()[1] == Approx(600));
  CHECK(c.backlogged(1));
}

TEST_CASE("the first tenant ever to queue is not lifted", "[tenants]") {
  service_counters c({1.0, 1.0});
  c.charge(1, 50, 0);  // service while not waiting (e.g. decoding) still counts
  c.enqueue(0);
  CHECK(c.counters()[0] == 0);
}

TEST_CASE("a reconfigured table keeps counters by tenant, and a new tenant starts at the lift", "[tenants]") {
  service_counters c({1.0, 1.0, 1.0});  // a, b, default
  c.enqueue(0);
  c.enqueue(1);
  c.charge(0, 500, 0);
  c.charge(1, 300, 0);
  c.charge(2, 900, 0);
  // New table: b, (new) n, default; a is gone. b keeps 300 and its waiting request; n starts at
  // the lowest backlogged counter, min(500, 300), as a tenant becoming backlogged would.
  const std::optional<uint32_t> from[] = {1, std::nullopt, 2};
  c.reconfigure({2.0, 1.0, 1.0}, from, {1, 0, 0});
  REQUIRE(c.counters().size() == 3);
  CHECK(c.counters()[0] == Approx(300));
  CHECK(c.counters()[1] == Approx(300));
  CHECK(c.counters()[2] == Approx(900));
  CHECK(c.backlogged(0));
  CHECK_FALSE(c.backlogged(1));
  c.charge(0, 100, 0);  // the new weight applies
  CHECK(c.counters()[0] == Approx(350));
}

TEST_CASE("tenant tables built in code are checked like the file's", "[tenants]") {
  auto with_voice = [](tenant_config second) {
    return check_tenants({{.name = "voice"}, std::move(second)});
  };
  auto message = [&](tenant_config second) { return with_voice(std::move(second)).error().message; };
  CHECK(with_voice({.name = "docs"}).ok());
  CHECK_THAT(message({.name = "voice"}), Catch::Contains("twice"));
  CHECK_THAT(message({.name = "*"}), Catch::Contains("name"));
  CHECK_THAT(message({.name = "docs", .weight = 0}), Catch::Contains("weight"));
  CHECK_THAT(message({.name = "docs", .weight = NAN}), Catch::Contains("weight"));
  CHECK_THAT(message({.name = "docs", .slo = {.itl_ms = -1}}), Catch::Contains("slo"));
  CHECK_THAT(message({.name = "docs", .slo = {.itl_quantile = 0}}), Catch::Contains("slo.itl_quantile"));
  CHECK_THAT(message({.name = "docs", .slo = {.itl_quantile = 1.01}}), Catch::Contains("slo.itl_quantile"));
  CHECK_THAT(message({.name = "docs", .key = "short"}), Catch::Contains("'docs': key"));
  CHECK(check_tenants({}).ok());
}
