#pragma once
// Malformed client messages, each with the field its `bad_request` must name (or a phrase of
// the message) and the id it must carry. Shared by test_protocol (the codec alone) and
// test_gateway (over a socket, while a well-formed stream runs).
#include <optional>
#include <string>
#include <vector>

namespace hearth::test {

struct bad_message {
  std::vector<std::string> frames;  //!< what a DEALER sends (the marker included)
  std::string names;                //!< a part of the error message
  std::optional<std::string> id;    //!< the id of the reply (null when none was readable)
};

inline std::vector<bad_message> malformed_corpus() {
  const std::string m = "hearth/1";
  auto gen = [](const std::string& extra) {
    return std::string(R"({"type":"generate","id":"g","prompt":"hi")") + extra + "}";
  };
  std::vector<bad_message> c = {
      {{m}, "exactly 2 frames", std::nullopt},
      {{m, "{}", "{}"}, "exactly 2 frames", std::nullopt},
      {{"hearth/2", gen("")}, "marker", std::nullopt},
      {{"", gen("")}, "marker", std::nullopt},
      {{m, "not json"}, "not valid JSON", std::nullopt},
      {{m, "{\"type\":\"ping\",\"id\":\"a\""}, "not valid JSON", std::nullopt},
      {{m, std::string("{\"type\":\"ping\",\"id\":\"\xff\xfe\"}")}, "not valid JSON", std::nullopt},
      {{m, "{\"type\":\"ping\",\"id\":\"\\ud800\"}"}, "not valid JSON", std::nullopt},
      {{m, "[1,2,3]"}, "JSON object", std::nullopt},
      {{m, "42"}, "JSON object", std::nullopt},
      {{m, std::string(10000, '[') + std::string(10000, ']')}, "nested too deeply", std::nullopt},
      {{m, R"({"type":"ping"})"}, "'id' is missing", std::nullopt},
      {{m, R"({"type":"ping","id":7})"}, "'id' must be a string", std::nullopt},
      {{m, R"({"type":"ping","id":""})"}, "'id' must be 1 to 64 bytes", std::nullopt},
      {{m, R"({"type":"ping","id":")" + std::string(65, 'x') + "\"}"},
       "'id' must be 1 to 64 bytes",
       std::nullopt},
      {{m, R"({"id":"a"})"}, "'type' is missing", "a"},
      {{m, R"({"id":"a","type":null})"}, "'type' must be a string", "a"},
      {{m, R"({"id":"a","type":"launch"})"}, "'type' must be generate", "a"},
      {{m, R"({"id":"a","type":"ping","extra":1})"}, "'extra' is not a field", "a"},
      {{m, R"({"id":"a","type":"cancel","stream":true})"}, "'stream' is not a field", "a"},
      {{m, R"({"type":"generate","id":"g"})"}, "exactly one must be given", "g"},
      {{m, gen(R"(,"messages":[{"role":"user","content":"x"}])")}, "exactly one must be given", "g"},
      {{m, gen(R"(,"temprature":0)")}, "'temprature' is not a field", "g"},
      {{m, R"({"type":"generate","id":"g","prompt":5})"}, "'prompt' must be a string", "g"},
      {{m, gen(R"(,"max_tokens":0)")}, "'max_tokens' must be an integer from 1 to 65536", "g"},
      {{m, gen(R"(,"max_tokens":65537)")}, "'max_tokens' must be an integer from 1 to 65536", "g"},
      {{m, gen(R"(,"max_tokens":12.5)")}, "'max_tokens' must be an integer", "g"},
      {{m, gen(R"(,"max_tokens":"12")")}, "'max_tokens' must be an integer", "g"},
      {{m, gen(R"(,"max_tokens":18446744073709551615)")}, "'max_tokens' must be an integer", "g"},
      {{m, gen(R"(,"max_tokens":-9223372036854775808)")}, "'max_tokens' must be an integer", "g"},
      {{m, gen(R"(,"temperature":-0.5)")}, "'temperature' must be a number in [0, 100]", "g"},
      {{m, gen(R"(,"temperature":1e308)")}, "'temperature' must be a number in [0, 100]", "g"},
      {{m, gen(R"(,"temperature":"hot")")}, "'temperature' must be a number", "g"},
      {{m, gen(R"(,"top_k":-1)")}, "'top_k' must be an integer from 0", "g"},
      {{m, gen(R"(,"top_k":99999999)")}, "'top_k' must be an integer from 0", "g"},
      {{m, gen(R"(,"top_p":0)")}, "'top_p' must be a number in (0, 1]", "g"},
      {{m, gen(R"(,"top_p":1.5)")}, "'top_p' must be a number in (0, 1]", "g"},
      {{m, gen(R"(,"min_p":2)")}, "'min_p' must be a number in [0, 1]", "g"},
      {{m, gen(R"(,"repetition_penalty":0)")}, "'repetition_penalty' must be a number in (0, 10]", "g"},
      {{m, gen(R"(,"repeat_last_n":70000)")}, "'repeat_last_n' must be an integer", "g"},
      {{m, gen(R"(,"seed":-1)")}, "'seed' must be an integer from 0 to 9007199254740992", "g"},
      {{m, gen(R"(,"seed":9007199254740993)")}, "'seed' must be an integer", "g"},
      {{m, gen(R"(,"stop":"\n")")}, "'stop' must be an array", "g"},
      {{m, gen(R"(,"stop":["a","b","c","d","e","f","g","h","i"])")}, "'stop' must have 0 to 8 entries", "g"},
      {{m, gen(R"(,"stop":[""])")}, "'stop[0]' must be 1 to 256 bytes", "g"},
      {{m, gen(R"(,"stop":["a",3])")}, "'stop[1]' must be a string", "g"},
      {{m, gen(R"(,"stream":"yes")")}, "'stream' must be true or false", "g"},
      {{m, gen(R"(,"tenant":"a b")")}, "'tenant' must be 1 to 64 letters", "g"},
      {{m, gen(R"(,"tenant":"")")}, "'tenant' must be 1 to 64 bytes", "g"},
      {{m, R"({"type":"generate","id":"g","messages":[]})"}, "'messages' must have 1 to 256 entries", "g"},
      {{m, R"({"type":"generate","id":"g","messages":{"role":"user"}})"}, "'messages' must be an array", "g"},
      {{m, R"({"type":"generate","id":"g","messages":["hi"]})"}, "'messages[0]' must be an object", "g"},
      {{m, R"({"type":"generate","id":"g","messages":[{"role":"user"}]})"},
       "'messages[0].content' is missing",
       "g"},
      {{m, R"({"type":"generate","id":"g","messages":[{"role":"root","content":"x"}]})"},
       "'messages[0].role' must be",
       "g"},
      {{m, R"({"type":"generate","id":"g","messages":[{"role":"user","content":"x","name":"bob"}]})"},
       "'messages[0].name' is not a field",
       "g"},
      {{m, R"({"type":"admin","id":"a"})"}, "'action' is missing", "a"},
      {{m, R"({"type":"admin","id":"a","action":"explode"})"}, "'action' must be", "a"},
      {{m, R"({"type":"admin","id":"a","action":"set_policy"})"}, "'policy' is missing", "a"},
      {{m, R"({"type":"admin","id":"a","action":"reload","policy":"slo"})"}, "'policy' is only for", "a"},
      {{m, R"({"type":"stats","id":"s","tenant":7})"}, "'tenant' must be a string", "s"},
  };
  return c;
}

}  // namespace hearth::test
