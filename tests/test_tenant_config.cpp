// The tenants section of the configuration file: the happy path and every error, each naming
// the line, the tenant and the field.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "tenants/tenant_config.hpp"

using namespace hearth;
using Catch::Matchers::Contains;

namespace {

// Two CURVE public keys from ZeroMQ's documentation, valid Z85.
const std::string key_a = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";
const std::string key_b = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";

const std::string household_toml = R"(
[engine]
policy = "household"   # another reader's section: ignored here

[[tenant]]
name = "voice"
key = ")" + key_a + R"("
class = "interactive"
weight = 2.0
slo = { ttft_ms = 300, itl_ms = 100, itl_quantile = 0.95 }
quota = { max_concurrent = 4, max_queued = 8, max_prompt_tokens = 2048, tokens_per_minute = 20000 }
admin = true

[[tenant]]
name = "nightly"
key = ")" + key_b + R"("
class = "background"
weight = 1
share_prefix = false
[tenant.quota]
max_queued = 100
)";

// The error message for a configuration of one tenant with the given extra lines.
std::string error_for(const std::string& lines, key_rule keys = key_rule::optional) {
  const auto r = parse_tenants("[[tenant]]\nname = \"voice\"\n" + lines, keys, "home.toml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::malformed);
  return r.error().message;
}

}  // namespace

TEST_CASE("tenants load from TOML with every field and the defaults", "[tenants]") {
  const auto r = parse_tenants(household_toml, key_rule::required);
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  const tenant_config& voice = (*r)[0];
  CHECK(voice.name == "voice");
  CHECK(voice.key == key_a);
  CHECK(voice.cls == tenant_class::interactive);
  CHECK(voice.weight == 2.0);
  CHECK(voice.slo.ttft_ms == 300);
  CHECK(voice.slo.itl_ms == 100);
  CHECK(voice.slo.itl_quantile == 0.95);
  CHECK(voice.quota.max_concurrent == 4);
  CHECK(voice.quota.max_queued == 8);
  CHECK(voice.quota.max_prompt_tokens == 2048);
  CHECK(voice.quota.tokens_per_minute == 20000);
  CHECK(voice.share_prefix);
  CHECK(voice.admin);
  const tenant_config& nightly = (*r)[1];
  CHECK(nightly.cls == tenant_class::background);
  CHECK(nightly.weight == 1.0);  // an integer is a number too
  CHECK(nightly.slo.ttft_ms == 0);
  CHECK(nightly.slo.itl_quantile == 0.9);
  CHECK(nightly.quota.tokens_per_minute == 0);
  CHECK(nightly.quota.max_queued == 100);  // a [tenant.quota] sub-table works like the inline one
  CHECK_FALSE(nightly.share_prefix);
  CHECK_FALSE(nightly.admin);  // admin is off unless asked for
}

TEST_CASE("a configuration without tenants gives an empty list", "[tenants]") {
  const auto r = parse_tenants("[engine]\npolicy = \"fcfs\"\n", key_rule::required);
  REQUIRE(r.ok());
  CHECK(r->empty());
}

TEST_CASE("development mode lets tenants go without keys", "[tenants]") {
  const auto r = parse_tenants("[[tenant]]\nname = \"voice\"\n", key_rule::optional);
  REQUIRE(r.ok());
  CHECK((*r)[0].key.empty());
  CHECK((*r)[0].cls == tenant_class::standard);
  CHECK_THAT(error_for("", key_rule::required), Contains("home.toml:1: tenant 'voice': key is missing"));
}

TEST_CASE("TOML syntax errors name the line", "[tenants]") {
  const auto r = parse_tenants("[[tenant]]\nname = \"voice\"\nweight = \n", key_rule::optional, "home.toml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::malformed);
  CHECK_THAT(r.error().message, Contains("home.toml:3: "));
}

TEST_CASE("every bad tenant field is named with its line", "[tenants]") {
  CHECK_THAT(error_for("qouta = { max_queued = 1 }"),
             Contains("home.toml:3: tenant 'voice': qouta is not a known field"));
  CHECK_THAT(error_for("key = \"short\""), Contains(":3: tenant 'voice': key must be a CURVE public key"));
  CHECK_THAT(error_for("key = \"" + key_a.substr(0, 39) + "~\""), Contains("key must be a CURVE public key"));
  CHECK_THAT(error_for("key = \"" + std::string(40, '#') + "\""), Contains("key must be a CURVE public key"));
  CHECK_THAT(error_for("key = 42"), Contains("key must be a string"));
  CHECK_THAT(error_for("class = \"urgent\""), Contains(":3: tenant 'voice': class must be \"interactive\""));
  CHECK_THAT(error_for("class = 1"), Contains("class must be a string"));
  CHECK_THAT(error_for("weight = 0"), Contains(":3: tenant 'voice': weight must be a number > 0"));
  CHECK_THAT(error_for("weight = -1.5"), Contains("weight must be a number > 0"));
  CHECK_THAT(error_for("weight = nan"), Contains("weight must be a number > 0"));
  CHECK_THAT(error_for("weight = \"2\""), Contains("weight must be a number"));
  CHECK_THAT(error_for("share_prefix = \"yes\""), Contains("share_prefix must be true or false"));
  CHECK_THAT(error_for("admin = 1"), Contains(":3: tenant 'voice': admin must be true or false"));
  CHECK_THAT(error_for("slo = 300"), Contains("slo must be a table"));
  CHECK_THAT(error_for("slo = { ttft_ms = -1 }"),
             Contains(":3: tenant 'voice': slo.ttft_ms must be a number >= 0"));
  CHECK_THAT(error_for("slo = { itl_ms = inf }"), Contains("slo.itl_ms must be a number >= 0"));
  CHECK_THAT(error_for("slo = { ttft = 300 }"),
             Contains("slo.ttft is not a known field (known: ttft_ms, itl_ms, itl_quantile)"));
  CHECK_THAT(error_for("slo = { itl_quantile = 0 }"),
             Contains(":3: tenant 'voice': slo.itl_quantile must be a number > 0"));
  CHECK_THAT(error_for("slo = { itl_quantile = 1.5 }"), Contains("slo.itl_quantile must be at most 1"));
  CHECK_THAT(error_for("quota = { max_queued = -1 }"),
             Contains(":3: tenant 'voice': quota.max_queued must be from 0"));
  CHECK_THAT(error_for("quota = { max_concurrent = 1.5 }"),
             Contains("quota.max_concurrent must be a whole number"));
  CHECK_THAT(error_for("quota = { tokens_per_minute = 5000000000 }"),
             Contains("quota.tokens_per_minute must be from 0"));
  CHECK_THAT(error_for("quota = { rpm = 5 }"), Contains("quota.rpm is not a known field"));
}

TEST_CASE("names must be present, well-formed and unique, and keys unique", "[tenants]") {
  auto error_of = [](const std::string& text) {
    const auto r = parse_tenants(text, key_rule::optional, "home.toml");
    REQUIRE_FALSE(r.ok());
    return r.error().message;
  };
  CHECK_THAT(error_of("[[tenant]]\nweight = 1\n"), Contains("home.toml:1: tenant #1: name is missing"));
  CHECK_THAT(error_of("[[tenant]]\nname = \"\"\n"), Contains("tenant #1: name must be 1 to 64"));
  CHECK_THAT(error_of("[[tenant]]\nname = \"my voice\"\n"), Contains("tenant #1: name must be 1 to 64"));
  CHECK_THAT(error_of("[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"a\"\n"),
             Contains("home.toml:3: tenant 'a': name is already used by tenant #1"));
  CHECK_THAT(error_of("[[tenant]]\nname = \"a\"\nkey = \"" + key_a +
                      "\"\n[[tenant]]\nname = \"b\"\nkey = \"" + key_a + "\"\n"),
             Contains("home.toml:4: tenant 'b': key is already used by tenant 'a'"));
  CHECK_THAT(error_of("[tenant]\nname = \"a\"\n"), Contains("tenant must be an array of tables"));
}

TEST_CASE("tenants load from a file, and a missing file is an io error", "[tenants]") {
  const std::string path = "test_tenant_config.toml";
  std::ofstream(path) << household_toml;
  const auto r = load_tenants(path, key_rule::required);
  std::remove(path.c_str());
  REQUIRE(r.ok());
  CHECK(r->size() == 2);
  const auto missing = load_tenants("no/such/file.toml", key_rule::required);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == errc::io);
  CHECK_THAT(missing.error().message, Contains("no/such/file.toml"));
}
