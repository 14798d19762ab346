// Prompt synthesis and schedules on real vocabularies: the micro test model's (600 tokens) and
// the tiny preset's (32000, what `hearth bench` runs against): every prompt re-encodes to exactly
// its planned length, a class's shared system prompt is the same leading tokens, and request k
// of a class is the same request at every rate.
#include <catch2/catch.hpp>

#include "bench/household/schedule.hpp"
#include "model/model_maker.hpp"

using namespace hearth;
using namespace hearth::household;

namespace {

const tokenizer& vocab_of(const char* preset) {
  static std::map<std::string, std::unique_ptr<tokenizer>> cache;
  auto& t = cache[preset];
  if (!t) {
    const model_preset micro{"micro", 64, 2, 4, 2, 96, 600};
    const model_preset p = std::string(preset) == "micro" ? micro : *find_preset(preset);
    auto tok = tokenizer::create(make_vocab({p, tensor_type::f32, 7, tokenizer_kind::bpe, 512}));
    REQUIRE(tok.ok());
    t = std::make_unique<tokenizer>(std::move(*tok));
  }
  return *t;
}

std::vector<token_id> encode(const tokenizer& tok, const std::string& text) {
  return tok.encode(text, {.add_bos = true, .parse_special = false});
}

}  // namespace

TEST_CASE("synthesised prompts re-encode to exactly their length", "[household]") {
  for (const char* preset : {"micro", "tiny"}) {
    const tokenizer& tok = vocab_of(preset);
    prompt_synth synth(tok);
    for (uint32_t n : {3u, 4u, 5u, 17u, 64u, 255u, 1000u, 3000u}) {
      for (uint64_t seed : {1u, 2u, 99u}) {
        INFO(preset << " n " << n << " seed " << seed);
        auto text = synth.make(n, seed);
        REQUIRE(text.ok());
        CHECK(encode(tok, *text).size() == n);
        CHECK(synth.count(*text) == n);
      }
    }
    CHECK(*synth.make(200, 1) != *synth.make(200, 2));  // each request its own text
    CHECK_FALSE(synth.make(1, 1).ok());                 // BOS alone leaves no room for text
  }
}

TEST_CASE("a shared system prompt is the same leading tokens of every prompt of the class", "[household]") {
  const tokenizer& tok = vocab_of("tiny");
  prompt_synth synth(tok);
  const auto a = encode(tok, *synth.make(400, 1, 128, 7)), b = encode(tok, *synth.make(600, 2, 128, 7));
  REQUIRE(a.size() == 400);
  REQUIRE(b.size() == 600);
  CHECK(std::equal(a.begin(), a.begin() + 128, b.begin()));
  CHECK_FALSE(std::equal(a.begin() + 128, a.begin() + 160, b.begin() + 128));
  const auto other = encode(tok, *synth.make(400, 1, 128, 8));  // another class's prefix
  CHECK_FALSE(std::equal(a.begin(), a.begin() + 128, other.begin()));
}

TEST_CASE("a schedule plans exact prompts, fits the context, and keeps request k at every rate",
          "[household]") {
  const tokenizer& tok = vocab_of("micro");
  auto w = parse_workload(default_workload_text());
  REQUIRE(w.ok());
  schedule_builder b(*w, tok, 2048);
  auto s1 = b.generate(20, 5);  // 20 x the household's rates for 5 s: about 48 requests
  REQUIRE(s1.ok());
  CHECK(s1->requests.size() > 20);
  CHECK(s1->clamped > 0);  // rag asks up to 4096 + 256 tokens of a 2048 context
  for (size_t i = 0; i < s1->requests.size(); ++i) {
    const bench_request& r = s1->requests[i];
    const workload_class& c = w->classes[s1->cls[i]];
    INFO("request " << i << " of " << c.name);
    CHECK(r.index == i);
    CHECK(r.tenant == c.name);
    CHECK(r.prompt_tokens == encode(tok, r.prompt));
    CHECK(r.prompt_tokens.size() + r.max_tokens <= 2048);
    CHECK(r.prompt_tokens.size() <= c.prompt.max);
    CHECK(r.max_tokens <= c.output.max);
    CHECK((i == 0 || r.at_s >= s1->requests[i - 1].at_s));
  }
  // Twice the rate: the same requests of each class at half the times.
  auto s2 = b.generate(40, 2.5);
  REQUIRE(s2.ok());
  auto of_class = [](const schedule& s, uint32_t cls) {
    std::vector<const bench_request*> v;
    for (size_t i = 0; i < s.requests.size(); ++i) {
      if (s.cls[i] == cls) v.push_back(&s.requests[i]);
    }
    return v;
  };
  for (uint32_t c = 0; c < w->classes.size(); ++c) {
    const auto a = of_class(*s1, c), d = of_class(*s2, c);
    REQUIRE(a.size() == d.size());
    for (size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k]->prompt == d[k]->prompt);
      CHECK(a[k]->max_tokens == d[k]->max_tokens);
      CHECK(d[k]->at_s == Approx(a[k]->at_s / 2));
    }
  }
}

TEST_CASE("a trace replays its own prompts or synthesised ones, and unknown tenants are refused",
          "[household]") {
  const tokenizer& tok = vocab_of("micro");
  auto w = parse_workload(default_workload_text());
  REQUIRE(w.ok());
  schedule_builder b(*w, tok, 2048);
  auto t = parse_trace(
      "{\"time\": 0.1, \"tenant\": \"chat\", \"prompt\": \"Lights off?\", \"max_tokens\": 8}\n"
      "{\"time\": 0.2, \"tenant\": \"rag\", \"prompt_tokens\": 700, \"max_tokens\": 16}\n");
  REQUIRE(t.ok());
  auto s = b.replay(*t);
  REQUIRE(s.ok());
  REQUIRE(s->requests.size() == 2);
  CHECK(s->requests[0].prompt == "Lights off?");
  CHECK(s->cls[1] == 1);
  CHECK(s->requests[1].prompt_tokens.size() == 700);
  CHECK(s->requests[1].max_tokens == 16);
  auto bad = parse_trace("{\"time\": 0, \"tenant\": \"tv\", \"prompt\": \"x\", \"max_tokens\": 1}\n");
  REQUIRE(bad.ok());
  auto refused = b.replay(*bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("'tv'") != std::string::npos);
}
