// Wire protocol v1's codec without sockets: well-formed messages parse into the right values
// with the documented defaults; every malformed one is refused naming its field; replies are
// the documented JSON.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "protocol_corpus.hpp"
#include "server/protocol.hpp"

using namespace hearth;
using namespace hearth::wire;
using Catch::Matchers::Contains;
using json = nlohmann::json;

namespace {

constexpr parse_limits limits{32000};

result<client_message, parse_failure> parse(const std::vector<std::string>& frames) {
  std::vector<std::string_view> views(frames.begin(), frames.end());
  return parse_message(views, limits);
}

template <class T>
T parse_as(const std::string& body) {
  auto r = parse({std::string(marker), body});
  if (!r) FAIL(r.error().message);
  REQUIRE(std::holds_alternative<T>(*r));
  return std::get<T>(*r);
}

}  // namespace

TEST_CASE("generate parses with protocol.md's defaults", "[protocol]") {
  const auto g = parse_as<generate_request>(R"({"type":"generate","id":"turn-17","prompt":"Lights off?"})");
  CHECK(g.id == "turn-17");
  CHECK(g.prompt == "Lights off?");
  CHECK(g.messages.empty());
  CHECK(g.max_tokens == 256);
  CHECK(g.sampling.temperature == 1.0f);
  CHECK(g.sampling.top_k == 0);
  CHECK(g.sampling.top_p == 1.0f);
  CHECK(g.sampling.min_p == 0.0f);
  CHECK(g.sampling.repetition_penalty == 1.0f);
  CHECK(g.sampling.repeat_last_n == 64);
  CHECK(g.sampling.seed == 0);
  CHECK(g.stop.empty());
  CHECK(g.stream);
  CHECK_FALSE(g.tenant);
}

TEST_CASE("generate parses every field", "[protocol]") {
  const auto g = parse_as<generate_request>(R"({"type":"generate","id":"t","messages":[
      {"role":"system","content":"You are terse."},{"role":"user","content":"Kitchen?"}],
      "max_tokens":64,"temperature":0,"top_k":40,"top_p":0.9,"min_p":0.05,"repetition_penalty":1.1,
      "repeat_last_n":32,"seed":9007199254740992,"stop":["\n\n","END"],"stream":false,"tenant":"voice"})");
  REQUIRE(g.messages.size() == 2);
  CHECK(g.messages[0].role == "system");
  CHECK(g.messages[1].content == "Kitchen?");
  CHECK_FALSE(g.prompt);
  CHECK(g.max_tokens == 64);
  CHECK(g.sampling.temperature == 0.0f);
  CHECK(g.sampling.top_k == 40);
  CHECK(g.sampling.top_p == Approx(0.9f));
  CHECK(g.sampling.repeat_last_n == 32);
  CHECK(g.sampling.seed == (uint64_t{1} << 53));
  CHECK(g.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK_FALSE(g.stream);
  CHECK(g.tenant == "voice");
}

TEST_CASE("the other requests parse", "[protocol]") {
  CHECK(parse_as<cancel_request>(R"({"type":"cancel","id":"turn-17"})").id == "turn-17");
  CHECK(parse_as<ping_request>(R"({"type":"ping","id":"p1"})").id == "p1");
  CHECK(parse_as<models_request>(R"({"type":"models","id":"m1"})").id == "m1");
  CHECK(parse_as<stats_request>(R"({"type":"stats","id":"s1","tenant":"docs"})").tenant == "docs");
  const auto a =
      parse_as<admin_request>(R"({"type":"admin","id":"a1","action":"set_policy","policy":"slo"})");
  CHECK((a.action == "set_policy" && a.policy == "slo"));
  CHECK(parse_as<admin_request>(R"({"type":"admin","id":"a2","action":"reload"})").action == "reload");
}

TEST_CASE("every malformed message is refused, naming its field", "[protocol]") {
  for (const auto& bad : hearth::test::malformed_corpus()) {
    INFO("frame 1: " << (bad.frames.size() > 1 ? bad.frames[1].substr(0, 120) : std::string("(none)")));
    const auto r = parse(bad.frames);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains(bad.names));
    CHECK(r.error().id == bad.id);
  }
}

TEST_CASE("top_k is bounded by the model's vocabulary", "[protocol]") {
  const std::string body = R"({"type":"generate","id":"g","prompt":"x","top_k":32001})";
  CHECK_FALSE(parse({std::string(marker), body}).ok());
  const std::string_view frames[] = {marker, body};
  CHECK(parse_message(frames, {40000}).ok());
}

TEST_CASE("replies are protocol.md's JSON", "[protocol]") {
  CHECK(json::parse(encode_accepted("t", 42)) ==
        json{{"type", "accepted"}, {"id", "t"}, {"prompt_tokens", 42}});
  CHECK(json::parse(encode_token("t", 0, 3821, "Done")) ==
        json{{"type", "token"}, {"id", "t"}, {"index", 0}, {"token", 3821}, {"text", "Done"}});
  const std::string whole = "Done.";
  const json done = json::parse(encode_done("t", "stop", {42, 9, 32}, {3.1, 61.5, 24.0, 253.5}, 0, &whole));
  CHECK(done["finish_reason"] == "stop");
  CHECK(done["usage"] == json{{"prompt_tokens", 42}, {"completion_tokens", 9}, {"cached_tokens", 32}});
  CHECK(done["timings"]["ttft_ms"] == 61.5);
  CHECK(done["text"] == "Done.");
  CHECK_FALSE(json::parse(encode_done("t", "eos", {}, {}, 0, nullptr)).contains("text"));
  const json err = json::parse(encode_error(std::nullopt, code::bad_request, "frame 1 is not valid JSON"));
  CHECK(err["id"].is_null());
  CHECK(err["code"] == "bad_request");
  CHECK_FALSE(err.contains("retry_after_ms"));
  CHECK(json::parse(encode_error("t", "over_quota", "later", 1800))["retry_after_ms"] == 1800);
  CHECK(json::parse(encode_heartbeat()) == json{{"type", "heartbeat"}});
}

TEST_CASE("invalid UTF-8 from the model never breaks a reply", "[protocol]") {
  const json t = json::parse(encode_token("t", 1, 7, std::string("a\xff") + "b"));
  CHECK(t["text"] ==
        "a\xEF\xBF\xBD"
        "b");  // U+FFFD
}
