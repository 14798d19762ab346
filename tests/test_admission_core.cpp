// Admission's decisions without actors: typed refusals in their documented order, tenant quotas
// (prompt length, queued requests, tokens per minute with retry_after_ms and refunds), the
// queue's class shares, and a tenant table replaced at run time.
#include <catch2/catch.hpp>

#include "core/admission_core.hpp"

using namespace hearth;

namespace {

constexpr admission_limits limits{
    .n_ctx = 512, .n_vocab = 100, .pool_tokens = 4096, .max_waiting = 8, .max_waiting_tokens = 1000};

request ask(std::string tenant, uint32_t n_prompt, uint32_t max_tokens = 10) {
  request r;
  r.tenant = std::move(tenant);
  r.prompt.assign(n_prompt, 5);
  r.max_tokens = max_tokens;
  return r;
}

reject_reason reason(const std::optional<refusal>& no) {
  return no ? no->reason : reject_reason::none;
}

tenant_config tenant(std::string name, tenant_class cls, tenant_quota quota = {}) {
  return {.name = std::move(name), .cls = cls, .quota = quota};
}

}  // namespace

TEST_CASE("admission refuses with the first failing check and changes nothing", "[admission]") {
  admission_core a(limits,
                   {tenant("kid", tenant_class::standard, {.max_queued = 1, .max_prompt_tokens = 20})}, 0);
  request bad = ask("kid", 30, 0);  // a bad request and too long for the tenant: bad_request first
  CHECK(reason(a.admit(1, bad, 0)) == reject_reason::bad_request);
  CHECK(reason(a.admit(2, ask("kid", 30), 0)) == reject_reason::too_long);
  const auto no = a.admit(3, ask("kid", 600), 0);
  CHECK(reason(no) == reject_reason::too_long);
  CHECK_THAT(no->message, Catch::Contains("context of 512"));
  CHECK(a.waiting() == 0);
  CHECK_FALSE(a.admit(4, ask("kid", 20), 0));
  const auto queued = a.admit(5, ask("kid", 5), 0);
  CHECK(reason(queued) == reject_reason::over_quota);
  CHECK_THAT(queued->message, Catch::Contains("max_queued"));
  CHECK(queued->retry_after_ms == 0);  // unknown: when one of its requests starts
  a.dequeued(4);
  CHECK_FALSE(a.admit(6, ask("kid", 5), 0));
  a.drain();
  CHECK(reason(a.admit(7, ask("kid", 1), 0)) == reject_reason::shutting_down);
}

TEST_CASE("tokens per minute reserve prompt + max_tokens and refund what a request did not use",
          "[admission]") {
  admission_core a(limits, {tenant("voice", tenant_class::interactive, {.tokens_per_minute = 600})}, 0);
  // 600 per minute = 10 per second; each request reserves 100 + 100.
  CHECK_FALSE(a.admit(1, ask("voice", 100, 100), 0));
  CHECK_FALSE(a.admit(2, ask("voice", 100, 100), 0));
  CHECK_FALSE(a.admit(3, ask("voice", 100, 100), 0));
  const auto no = a.admit(4, ask("voice", 100, 100), 0);
  REQUIRE(reason(no) == reject_reason::over_quota);
  CHECK(no->retry_after_ms == 20000);  // 200 tokens at 10 per second
  // Request 1 used 10 of its 100 completion tokens: 90 come back, so 110 are missing after 0 s.
  a.dequeued(1);
  a.finished(1, 10, 0);
  CHECK(a.admit(5, ask("voice", 100, 100), 0)->retry_after_ms == 11000);
  CHECK_FALSE(a.admit(6, ask("voice", 100, 100), 11.0));
  // Another tenant, or one not configured, is not limited by voice's bucket.
  CHECK_FALSE(a.admit(7, ask("someone", 100, 100), 11.0));
}

TEST_CASE("under overload the queue refuses background first, then standard, interactive last",
          "[admission]") {
  admission_core a(limits,
                   {tenant("voice", tenant_class::interactive), tenant("docs", tenant_class::standard),
                    tenant("nightly", tenant_class::background)},
                   0);
  request_id id = 1;
  // max_waiting 8: background may fill 4, standard 6, interactive all 8.
  for (int i = 0; i < 4; ++i) REQUIRE_FALSE(a.admit(id++, ask("nightly", 10), 0));
  CHECK(reason(a.admit(id++, ask("nightly", 10), 0)) == reject_reason::queue_full);
  for (int i = 0; i < 2; ++i) REQUIRE_FALSE(a.admit(id++, ask("docs", 10), 0));
  CHECK(reason(a.admit(id++, ask("docs", 10), 0)) == reject_reason::queue_full);
  CHECK(reason(a.admit(id++, ask("stranger", 10), 0)) ==
        reject_reason::queue_full);  // the default slot is standard
  for (int i = 0; i < 2; ++i) REQUIRE_FALSE(a.admit(id++, ask("voice", 10), 0));
  CHECK(reason(a.admit(id++, ask("voice", 10), 0)) == reject_reason::queue_full);
  CHECK(a.waiting() == 8);
  // Tokens too: 1000 waiting tokens, background up to 500.
  admission_core b(
      limits, {tenant("voice", tenant_class::interactive), tenant("nightly", tenant_class::background)}, 0);
  REQUIRE_FALSE(b.admit(1, ask("nightly", 400), 0));
  CHECK(reason(b.admit(2, ask("nightly", 101), 0)) == reject_reason::queue_full);
  CHECK_FALSE(b.admit(3, ask("voice", 500), 0));
  CHECK(b.waiting_tokens() == 900);
}

TEST_CASE("without tenant configuration every request may fill the whole queue", "[admission]") {
  admission_core a(limits, {}, 0);
  for (request_id id = 1; id <= 8; ++id) REQUIRE_FALSE(a.admit(id, ask("anyone", 10), 0));
  CHECK(reason(a.admit(9, ask("anyone", 10), 0)) == reject_reason::queue_full);
  a.finished(3, 0, 0);  // ended while waiting: no longer counted
  CHECK_FALSE(a.admit(10, ask("anyone", 10), 0));
}

TEST_CASE("a new tenant table applies to the next request and keeps counts and buckets by name",
          "[admission]") {
  admission_core a(limits,
                   {tenant("kid", tenant_class::standard, {.max_queued = 2, .tokens_per_minute = 600})}, 0);
  REQUIRE_FALSE(a.admit(1, ask("kid", 100, 100), 0));
  REQUIRE_FALSE(a.admit(2, ask("kid", 100, 100), 0));
  CHECK(reason(a.admit(3, ask("kid", 10, 10), 0)) == reject_reason::over_quota);
  // Reload: kid may queue 3, its rate doubles; the bucket keeps its level (200 left of 600).
  a.set_tenants({tenant("kid", tenant_class::standard, {.max_queued = 3, .tokens_per_minute = 1200})}, 0);
  CHECK(a.queued("kid") == 2);
  CHECK_FALSE(a.admit(4, ask("kid", 100, 100), 0));
  const auto no = a.admit(5, ask("kid", 1, 1), 0);
  CHECK(reason(no) == reject_reason::over_quota);
  CHECK_THAT(no->message, Catch::Contains("max_queued"));
  a.dequeued(1);
  CHECK(a.admit(6, ask("kid", 100, 100), 0)->retry_after_ms == 10000);  // 200 at 20 per second
  // Reload without the tenant: no quota at all, and the queue's class shares no longer apply.
  a.set_tenants({}, 0);
  CHECK_FALSE(a.admit(7, ask("kid", 100, 100), 0));
}
