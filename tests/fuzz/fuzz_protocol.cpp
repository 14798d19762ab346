// Parses arbitrary client messages with the wire protocol's codec. The input is split into frames
// at each "\n|\n"; whatever comes in, parsing returns a value or a refusal (never a crash), a
// refusal's id is a readable one, and a parsed generate's values are within protocol.md's limits.

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "server/protocol.hpp"

using namespace hearth;
using hearth::fuzz::check;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds({
      ("hearth/1\n|\n{\"type\":\"generate\",\"id\":\"t\",\"prompt\":\"hi\",\"max_tokens\":8,"
       "\"temperature\":0.5,\"top_k\":4,\"top_p\":0.9,\"stop\":[\"\\n\"],\"stream\":false,"
       "\"tenant\":\"voice\",\"seed\":3}"),
      ("hearth/1\n|\n{\"type\":\"generate\",\"id\":\"u\","
       "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"),
      "hearth/1\n|\n{\"type\":\"admin\",\"id\":\"a\",\"action\":\"set_policy\",\"policy\":\"slo\"}",
      "hearth/1\n|\n{\"type\":\"stats\",\"id\":\"s\"}",
      "hearth/1\n|\n{\"type\":\"cancel\",\"id\":\"t\"}",
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto frames = fuzz::split(input, "\n|\n");
  const auto r = wire::parse_message(frames, {1000});
  if (!r) {
    check(!r.error().message.empty(), "a refusal without a message");
    if (r.error().id)
      check(!r.error().id->empty() && r.error().id->size() <= wire::max_id_bytes, "a bad id echoed");
    (void)wire::encode_error(r.error().id, wire::code::bad_request, r.error().message);
    return 0;
  }
  if (const auto* g = std::get_if<wire::generate_request>(&*r)) {
    check(g->max_tokens >= 1 && g->max_tokens <= 65536, "max_tokens out of range");
    check(g->sampling.top_k <= 1000, "top_k beyond the vocabulary");
    check(g->prompt.has_value() != !g->messages.empty(), "not exactly one of prompt and messages");
    check(g->stop.size() <= 8, "too many stop strings");
  }
  return 0;
}
