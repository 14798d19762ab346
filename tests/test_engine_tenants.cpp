// Tenants through the real engine on the `tiny` model: quotas refuse the right tenant with the
// right code and leave the others alone, a tenant table replaced at run time applies to the next
// request, and every refusal is counted by tenant and reason.
#include <catch2/catch.hpp>

#include <vector>

#include "engine_harness.hpp"

using namespace hearth;
using namespace hearth::test;

namespace {

size_t rejected(const metrics_snapshot& m, const std::string& tenant, reject_reason why) {
  for (const auto& t : m.tenants)
    if (t.tenant == tenant) return t.rejected[static_cast<size_t>(why)];
  return 0;
}

}  // namespace

TEST_CASE("a tenant over its quota is rejected with the right code while the others are unaffected",
          "[engine]") {
  engine_config cfg{
      .max_batched_tokens = 64, .max_seqs = 16, .long_prefill_threshold = 32, .policy = "household"};
  cfg.tenants = {{.name = "kid", .quota = {.max_concurrent = 1, .max_queued = 2, .max_prompt_tokens = 64}},
                 {.name = "meter", .quota = {.tokens_per_minute = 100}},
                 {.name = "parent"}};
  auto e = start_engine(cfg);
  event_queue self(*e);
  std::mt19937_64 rng(21);
  std::vector<request_id> order;  // ids in the order their events arrive
  auto submit = [&](const std::string& tenant, size_t n_prompt, uint32_t max_tokens) {
    return e->submit(greedy(random_prompt(n_prompt, 32000, rng), max_tokens, tenant), self.sink());
  };
  const request_id long_prompt = submit("kid", 100, 4);
  // One kid request runs, two may wait; each takes 30 steps, so the rest of this burst (sent
  // within microseconds) finds the kid's queue full whether or not the first has started.
  std::vector<request_id> kid;
  for (int i = 0; i < 6; ++i) kid.push_back(submit("kid", 8, 30));
  // 100 tokens per minute: two requests of 10 + 40 empty the bucket, a third waits 30 s.
  const request_id meter1 = submit("meter", 10, 40), meter2 = submit("meter", 10, 40),
                   meter3 = submit("meter", 10, 40);
  std::vector<request_id> parent;
  for (int i = 0; i < 6; ++i) parent.push_back(submit("parent", 8 + 4 * i, 12));
  const size_t n = 1 + kid.size() + 3 + parent.size();
  outcome o;
  while (o.terminal.size() < n) {
    auto ev = self.next(std::chrono::seconds(120));
    REQUIRE(ev);
    order.push_back(ev->id);
    record(*ev, o);
  }
  CHECK(o.terminal.at(long_prompt).reason == reject_reason::too_long);
  CHECK_THAT(o.terminal.at(long_prompt).message, Catch::Contains("max_prompt_tokens"));
  std::vector<request_id> kid_done;
  size_t kid_over = 0;
  for (request_id id : kid) {
    const request_event& ev = o.terminal.at(id);
    if (ev.kind == event_kind::done) kid_done.push_back(id);
    if (ev.reason == reject_reason::over_quota) {
      ++kid_over;
      CHECK(ev.retry_after_ms == 0);  // a queue quota: no time is known
    }
  }
  CHECK(kid_done.size() + kid_over == kid.size());
  CHECK((kid_done.size() == 2 || kid_done.size() == 3));  // two waiting, and maybe one already started
  // max_concurrent 1: each of the kid's streams ends before the next one's first token (the
  // event after its `accepted`).
  auto ended_at = [&](request_id id) {
    return order.rend() - std::ranges::find(order.rbegin(), order.rend(), id) - 1;
  };
  auto first_token_at = [&](request_id id) {
    const auto accepted = std::ranges::find(order, id);
    return std::find(accepted + 1, order.end(), id) - order.begin();
  };
  for (size_t i = 1; i < kid_done.size(); ++i) CHECK(ended_at(kid_done[i - 1]) < first_token_at(kid_done[i]));
  CHECK(o.terminal.at(meter1).kind == event_kind::done);
  CHECK(o.terminal.at(meter2).kind == event_kind::done);
  CHECK(o.terminal.at(meter3).reason == reject_reason::over_quota);
  CHECK(o.terminal.at(meter3).retry_after_ms > 20000);  // ~30 s, less what completions left unused
  for (request_id id : parent) CHECK(o.terminal.at(id).kind == event_kind::done);
  const auto m = *e->metrics();
  CHECK(rejected(m, "kid", reject_reason::too_long) == 1);
  CHECK(rejected(m, "kid", reject_reason::over_quota) == kid_over);
  CHECK(rejected(m, "meter", reject_reason::over_quota) == 1);
  for (size_t why = 0; why < 7; ++why) CHECK(rejected(m, "parent", static_cast<reject_reason>(why)) == 0);
  CHECK(e->gauges()->kv.used == 0);
}

TEST_CASE("set_tenants applies new quotas to the next request and refuses a bad table", "[engine]") {
  engine_config cfg{.policy = "household"};
  cfg.tenants = {{.name = "kid", .quota = {.max_prompt_tokens = 8}}};
  auto e = start_engine(cfg);
  event_queue self(*e);
  std::mt19937_64 rng(22);
  const request_id before = e->submit(greedy(random_prompt(12, 32000, rng), 4, "kid"), self.sink());
  // A name used twice: refused, and the table in force stays as it was.
  const auto bad = e->set_tenants({{.name = "kid"}, {.name = "kid"}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == errc::invalid_argument);
  const request_id still = e->submit(greedy(random_prompt(12, 32000, rng), 4, "kid"), self.sink());
  REQUIRE(e->set_tenants(
      {{.name = "kid", .cls = tenant_class::interactive, .quota = {.max_prompt_tokens = 16}}}));
  const request_id after = e->submit(greedy(random_prompt(12, 32000, rng), 4, "kid"), self.sink());
  REQUIRE(e->set_tenants({}));  // back to no tenant configuration
  const request_id none = e->submit(greedy(random_prompt(40, 32000, rng), 4, "kid"), self.sink());
  outcome o;
  collect(self, 4, o);
  CHECK(o.terminal.at(before).reason == reject_reason::too_long);
  CHECK(o.terminal.at(still).reason == reject_reason::too_long);
  CHECK(o.terminal.at(after).kind == event_kind::done);
  CHECK(o.terminal.at(none).kind == event_kind::done);
  CHECK(rejected(*e->metrics(), "kid", reject_reason::too_long) == 2);
}

TEST_CASE("names outside the tenant table cost bounded memory, and one tenant's stats read only it",
          "[engine]") {
  engine_config cfg{.max_batched_tokens = 64, .max_seqs = 16};
  cfg.tenants = {{.name = "listed"}};
  auto e = start_engine(cfg);
  event_queue self(*e);
  // 300 names, each refused at admission (prompt + max_tokens beyond the context of 512).
  const size_t n_names = 300;
  for (size_t i = 0; i < n_names; ++i)
    e->submit(greedy(std::vector<token_id>(400, 5), 200, "guest-" + std::to_string(i)), self.sink());
  e->submit(greedy(std::vector<token_id>(400, 5), 200, "listed"), self.sink());
  outcome o;
  collect(self, n_names + 1, o);
  const auto all = *e->metrics();
  INFO(all.tenants.size() << " names counted");
  CHECK(all.tenants.size() <= 64 + 2);  // 64 unlisted names, the shared state, the listed one
  CHECK(rejected(all, "listed", reject_reason::too_long) == 1);
  CHECK(rejected(all, "guest-0", reject_reason::too_long) == 1);
  CHECK(rejected(all, std::string(unlisted_tenants), reject_reason::too_long) == n_names - 64);
  // One tenant's stats: that tenant alone, under the name it is counted as.
  const auto one = *e->metrics(std::string("guest-0"));
  REQUIRE(one.tenants.size() == 1);
  CHECK(one.tenants[0].tenant == "guest-0");
  const auto late = *e->metrics(std::string("guest-299"));
  REQUIRE(late.tenants.size() == 1);
  CHECK(late.tenants[0].tenant == unlisted_tenants);
  CHECK(e->metrics(std::string("nobody"))->tenants.empty() == false);  // unlisted names share, once full
  CHECK(e->metrics(std::string("listed"))->tenants.at(0).tenant == "listed");
}
