// Feeds arbitrary bytes to the C++ client's reply handling as what a server sent. The input is
// split into messages at each "\n#\n" and each message into frames at "\n|\n"; every message goes
// through decode_reply() and, while it is about request "c1", into one generation, as
// stream::next() does. Whatever comes in, nothing throws (an exception would end the harness)
// and, judged against the input itself:
// - a message decodes exactly when it is the marker and a JSON object with a string type and id;
// - the generation ends at the first done or error about c1 and nowhere else, once: a done with a
//   completion whose text is the done's own (when it is a string) or the streamed tokens' texts,
//   an error with the reply's code (or `protocol`, when it has none that is a non-empty string);
// - a token is handed out exactly for a token message whose text is a string, with that text,
//   and only tokens move the deadline (accepted, skipped and unknown messages do not);
// - a field read as an integer type holds exactly the JSON value.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "clients/cpp/replies.hpp"
#include "fuzz_support.hpp"

using namespace hearth::client;
namespace fuzz = hearth::fuzz;
using fuzz::check;
using json = nlohmann::json;

namespace {

constexpr std::chrono::milliseconds first_token_timeout{100}, idle_timeout{10};
const std::string ours = "c1";

//! The JSON object a message carries when it is protocol v1, else a discarded value.
json body_of(const std::vector<std::string_view>& frames) {
  if (frames.size() != 2 || frames[0] != "hearth/1") return json(json::value_t::discarded);
  json j = json::parse(frames[1], nullptr, false);
  return j.is_object() ? j : json(json::value_t::discarded);
}

bool is_string_member(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_string();
}

//! Integer reads give the JSON value itself or nothing, never a wrapped or truncated one: the
//! members of `obj` and of the objects in it (usage, timings).
template <class T>
void check_integer_reads(const json& obj) {
  for (const auto& [key, v] : obj.items()) {
    if (const auto x = field<T>(obj, key))
      check(json(*x) == v && v.is_number_integer(), "an integer read changed the value");
    if (v.is_object())
      for (const auto& [inner, w] : v.items())
        if (const auto x = field<T>(v, inner))
          check(json(*x) == w && w.is_number_integer(), "a nested read changed the value");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds({
      // A streamed generation, with a heartbeat and someone else's token in it.
      ("hearth/1\n|\n{\"type\":\"accepted\",\"id\":\"c1\",\"prompt_tokens\":3}\n#\n"
       "hearth/1\n|\n{\"type\":\"heartbeat\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"token\",\"id\":\"c1\",\"index\":0,\"token\":17,\"text\":\"Lig\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"token\",\"id\":\"c9\",\"index\":0,\"token\":1,\"text\":\"!\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"token\",\"id\":\"c1\",\"index\":1,\"token\":9,\"text\":\"hts\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"done\",\"id\":\"c1\",\"finish_reason\":\"length\","
       "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"cached_tokens\":0},"
       "\"timings\":{\"queue_ms\":0.5,\"ttft_ms\":4.25,\"prefill_ms\":3,\"first_step_ms\":0.75,"
       "\"mean_itl_ms\":2,\"e2e_ms\":6.5},\"preemptions\":0}"),
      // Not streamed: the text comes with done.
      ("hearth/1\n|\n{\"type\":\"accepted\",\"id\":\"c1\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"done\",\"id\":\"c1\",\"finish_reason\":\"eos\",\"text\":\"Off.\"}"),
      // Refused, with a retry time.
      ("hearth/1\n|\n{\"type\":\"error\",\"id\":\"c1\",\"code\":\"over_quota\",\"message\":\"slow\","
       "\"retry_after_ms\":250}"),
      // Wrongly typed fields, then an unknown type, then a proper end.
      ("hearth/1\n|\n{\"type\":\"token\",\"id\":\"c1\",\"index\":\"x\",\"token\":2.5,\"text\":\"a\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"token\",\"id\":\"c1\",\"index\":1,\"token\":3,\"text\":7}\n#\n"
       "hearth/1\n|\n{\"type\":5,\"id\":\"c1\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"later\",\"id\":\"c1\",\"what\":[1,2]}\n#\n"
       "hearth/1\n|\n{\"type\":\"done\",\"id\":\"c1\",\"finish_reason\":3,\"usage\":5,\"timings\":\"t\","
       "\"preemptions\":-1}"),
      // Integers beyond the fields' types.
      ("hearth/1\n|\n{\"type\":\"token\",\"id\":\"c1\",\"index\":4294967296,\"token\":2147483648,"
       "\"text\":\"z\"}\n#\n"
       "hearth/1\n|\n{\"type\":\"done\",\"id\":\"c1\",\"usage\":{\"prompt_tokens\":18446744073709551615},"
       "\"preemptions\":-2147483649}"),
      "hearth/1\n|\n{\"type\":\"error\",\"id\":\"c1\",\"code\":3,\"message\":[],\"retry_after_ms\":-4}",
      // Not protocol v1 at all.
      ("hearth/2\n|\n{\"type\":\"done\",\"id\":\"c1\"}\n#\n"
       "hearth/1\n#\n"
       "hearth/1\n|\n[1]\n|\n{}\n#\n"
       "hearth/1\n|\n\xff{"),
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto start = generation::clock_type::time_point{} + std::chrono::hours(1);
  generation gen(start, first_token_timeout, idle_timeout);
  std::string streamed_text;
  size_t streamed_tokens = 0;
  auto last_token = start;
  auto now = start;
  for (std::string_view message : fuzz::split(input, "\n#\n")) {
    now += std::chrono::milliseconds(1);
    const auto frames = fuzz::split(message, "\n|\n");
    const json body = body_of(frames);
    const bool readable = is_string_member(body, "type") && is_string_member(body, "id");
    const auto r = decode_reply(frames);
    check(r.has_value() == readable, "decoded a message that is not a reply, or dropped one that is");
    if (!r) continue;
    check(r->type == body["type"].get<std::string>() && r->id == body["id"].get<std::string>(),
          "type or id changed");
    check_integer_reads<uint32_t>(body);
    check_integer_reads<int32_t>(body);
    check_integer_reads<uint64_t>(body);
    check_integer_reads<int64_t>(body);
    (void)error_of(body);
    if (r->id != ours || gen.ended())
      continue;  // another request's, or after the end (the stream reads no further)

    const auto t = gen.feed(*r, now);
    const bool terminal = r->type == "done" || r->type == "error";
    check(gen.ended() == terminal, "ended other than at a done or an error");
    check(t.has_value() == (r->type == "token" && is_string_member(body, "text")),
          "a token handed out wrongly");
    if (t) {
      check(t->text == body["text"].get<std::string>(), "a token's text changed");
      const json& index = body.contains("index") ? body["index"] : json();
      const bool index_fits = index.is_number_unsigned() && index.get<uint64_t>() <= UINT32_MAX;
      check(t->index == (index_fits ? index.get<uint64_t>() : streamed_tokens),
            "a token's index is neither its own nor its place");
      streamed_text += t->text;
      ++streamed_tokens;
      last_token = now;
    }
    if (!gen.ended()) {
      check(gen.deadline() == (streamed_tokens > 0 ? last_token + idle_timeout : start + first_token_timeout),
            "the deadline moved without a token");
      continue;
    }
    const auto& result = gen.result();
    check(result.ok() == (r->type == "done"), "a done that failed or an error that succeeded");
    if (result.ok()) {
      check(
          result->text == (is_string_member(body, "text") ? body["text"].get<std::string>() : streamed_text),
          "the completion's text is neither done's nor the tokens'");
      check(result->tokens.size() == streamed_tokens, "the completion lost or gained tokens");
      check(result->client_e2e_ms == std::chrono::duration<double, std::milli>(now - start).count(),
            "the client's end-to-end time is not the done's arrival");
    } else {
      const bool has_code = is_string_member(body, "code") && !body["code"].get<std::string>().empty();
      check(result.error().code == (has_code ? body["code"].get<std::string>() : "protocol"),
            "the error's code changed");
    }
  }
  return 0;
}
