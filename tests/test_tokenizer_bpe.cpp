#include <catch2/catch.hpp>

#include <random>

#include "model/byte_unicode.hpp"
#include "model/tokenizer.hpp"
#include "model/unicode.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

// Ids 0..255 are the single bytes in GPT-2's alphabet (byte b is id b, so ' ' = 32 is "Ġ");
// the merges below, in rank order, add one token each from id 256.
const std::vector<std::string> merges = {
    "h e",         // rank 0 -> 256 "he"
    "t he",        // rank 1 -> 257 "the"
    "\u0120 t",    // rank 2 -> 258 "Ġt"
    "\u0120t he",  // rank 3 -> 259 "Ġthe"
    "a t",         // rank 4 -> 260 "at"
    "\u0120 c",    // rank 5 -> 261 "Ġc"
    "\u0120c at",  // rank 6 -> 262 "Ġcat"
    "3 4",         // rank 7 -> 263 "34"
    "4 5",         // rank 8 -> 264 "45"
};
constexpr token_id id_he = 256, id_the = 257, id_sp_the = 259, id_at = 260, id_sp_cat = 262, id_34 = 263,
                   id_45 = 264;
// Specials after the merges.
constexpr token_id id_eot = 265, id_im_end = 266, id_think = 267;

vocab_spec make_spec(const std::string& pre) {
  vocab_spec v;
  v.kind = tokenizer_kind::bpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(bytes_to_bpe_text(std::string(1, static_cast<char>(b))));
  for (const auto& m : merges) {
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    v.tokens.push_back(joined);
  }
  v.merges = merges;
  v.tokens.insert(v.tokens.end(), {"<|endoftext|>", "<|im_end|>", "<think>"});
  v.types.assign(v.tokens.size(), token_type::normal);
  v.types[size_t(id_eot)] = token_type::control;
  v.types[size_t(id_im_end)] = token_type::control;
  v.types[size_t(id_think)] = token_type::user_defined;
  v.eos = id_eot;
  return v;
}

tokenizer make_tokenizer(const std::string& pre = "gpt2") {
  auto t = tokenizer::create(make_spec(pre));
  REQUIRE(t.ok());
  return std::move(t).value();
}

using ids = std::vector<token_id>;

ids bytes_of(std::string_view s) {
  ids out;
  for (char c : s) out.push_back(static_cast<uint8_t>(c));
  return out;
}

}  // namespace

TEST_CASE("bpe merges the lowest rank first within each piece", "[tokenizer][bpe]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.kind() == tokenizer_kind::bpe);
  // "the" -> t h e: "h e" (rank 0) then "t he" (rank 1).
  // " cat" -> Ġ c a t: "a t" (4) before "Ġ c" (5), then "Ġc at" (6).
  CHECK(tok.encode("the cat") == ids{id_the, id_sp_cat});
  // " the" -> Ġ t h e: "h e" (0) and "t he" (1) beat "Ġ t" (2), so Ġthe is never reached: Ġ + the.
  CHECK(tok.encode("the the") == ids{id_the, ' ', id_the});
  // No merge joins "c" and "at".
  CHECK(tok.encode("cat") == ids{'c', id_at});
  CHECK(tok.encode("hehe") == ids{id_he, id_he});
  CHECK(tok.encode("\xC3\xA9") == ids{0xC3, 0xA9});  // é: two byte tokens
  CHECK(tok.encode("").empty());
  CHECK(tok.encode("the", {true, false}) == ids{id_the});  // the vocabulary does not ask for BOS
}

TEST_CASE("bpe pre-tokenizer choice shows in the ids", "[tokenizer][bpe]") {
  // gpt2 keeps "12345" one piece: "3 4" (7) merges before "4 5" (8) could.
  CHECK(make_tokenizer("gpt2").encode("12345") == ids{'1', '2', id_34, '5'});
  // llama-bpe splits "123" | "45": "3 4" cannot cross the split, "4 5" applies.
  CHECK(make_tokenizer("llama-bpe").encode("12345") == ids{'1', '2', '3', id_45});
  CHECK(make_tokenizer("qwen2").encode("12345") == ids{'1', '2', '3', '4', '5'});
  // llama-bpe ignores merges for a piece that is a whole token: " the" is "Ġthe" directly.
  CHECK(make_tokenizer("llama-bpe").encode(" the") == ids{id_sp_the});
  CHECK(make_tokenizer("gpt2").encode(" the") == ids{' ', id_the});
}

TEST_CASE("bpe special tokens only with parse_special", "[tokenizer][bpe]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.encode("hi<|endoftext|>", {false, true}) == ids{'h', 'i', id_eot});
  // As text, none of "<|endoftext|>"'s byte pairs has a merge: each byte is its own token.
  CHECK(tok.encode("hi<|endoftext|>", {false, false}) == bytes_of("hi<|endoftext|>"));
  CHECK(tok.encode("<think>the</think>", {false, true}) == [] {
    ids v{id_think, id_the};
    for (token_id b : bytes_of("</think>")) v.push_back(b);
    return v;
  }());
  CHECK(tok.encode("<|im_end|><|endoftext|>", {false, true}) == ids{id_im_end, id_eot});
  // The longer special wins where two overlap.
  vocab_spec v = make_spec("gpt2");
  v.tokens.push_back("<|im");
  v.types.push_back(token_type::control);
  auto t2 = tokenizer::create(v);
  REQUIRE(t2.ok());
  CHECK(t2->encode("<|im_end|>", {false, true}) == ids{id_im_end});
}

TEST_CASE("bpe decoding maps the alphabet back to bytes", "[tokenizer][bpe]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.token_bytes(' ') == " ");
  CHECK(tok.token_bytes(id_sp_cat) == " cat");
  CHECK(tok.token_bytes(id_eot).empty());
  CHECK(tok.token_bytes(id_eot, true) == "<|endoftext|>");
  CHECK(tok.token_bytes(id_think) == "<think>");
  CHECK(tok.decode(ids{id_the, ' ', id_the, id_eot}) == "the the");
  CHECK(tok.decode(ids{id_the, id_eot}, true) == "the<|endoftext|>");
  CHECK(tok.decode(ids{-5, 100000}).empty());
}

TEST_CASE("bpe round-trips valid UTF-8, and invalid bytes come back as U+FFFD as llama.cpp reads them",
          "[tokenizer][bpe]") {
  const std::vector<std::string> texts = {
      "the cat sat on the mat",
      "  leading and trailing  ",
      "tabs\tand\nnew\r\nlines\n\n\n",
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB and "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C 12345 I'M",
      "e\xCC\x81 combining",
      std::string("nul \0 inside", 12),
      "<|endoftext|> as text",
  };
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  for (const char* pre : {"gpt2", "llama-bpe", "qwen2", "smollm"}) {
    CAPTURE(pre);
    const tokenizer tok = make_tokenizer(pre);
    for (const auto& text : texts) {
      CAPTURE(text);
      CHECK(tok.decode(tok.encode(text)) == text);
      CHECK(tok.decode(tok.encode(text, {false, true}), true) == text);
    }
    const std::string fffd = "\xEF\xBF\xBD";
    CHECK(tok.decode(tok.encode("bad \xFF\xFE bytes \xC3 cut \xE2\x82")) ==
          "bad " + fffd + fffd + " bytes " + fffd + " cut " + fffd + fffd);
    for (int round = 0; round < 100; ++round) {
      std::string text(rng() % 64, '\0');
      for (char& c : text) c = static_cast<char>(rng() & 0xff);
      REQUIRE(tok.decode(tok.encode(text)) == llama_cpp_utf8(text));
    }
  }
}

TEST_CASE("bpe vocabulary validation", "[tokenizer][bpe]") {
  vocab_spec v = make_spec("gpt2");
  v.merges.push_back("c a");  // "ca" is not a token
  auto r = tokenizer::create(v);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::malformed);
  CHECK(r.error().message.find("\"ca\"") != std::string::npos);

  v = make_spec("gpt2");
  v.merges.push_back("nospace");
  r = tokenizer::create(v);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("nospace") != std::string::npos);

  v = make_spec("deepseek-coder");
  r = tokenizer::create(v);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::unsupported);
  CHECK(r.error().message.find("llama-bpe") != std::string::npos);

  v = make_spec("gpt2");
  v.types.pop_back();
  CHECK_FALSE(tokenizer::create(v).ok());

  CHECK_FALSE(tokenizer::create(vocab_spec{}).ok());

  v = make_spec("gpt2");
  v.add_bos = true;  // but no bos id
  CHECK_FALSE(tokenizer::create(v).ok());
}

TEST_CASE("bpe duplicate token texts resolve to the first id", "[tokenizer][bpe]") {
  vocab_spec v = make_spec("gpt2");
  v.tokens.push_back("the");  // a second "the" after all others
  v.types.push_back(token_type::normal);
  auto r = tokenizer::create(v);
  REQUIRE(r.ok());
  CHECK(r->encode("the") == ids{id_the});
  CHECK(r->token_bytes(token_id(v.tokens.size() - 1)) == "the");
}

TEST_CASE("bpe end of generation", "[tokenizer][bpe]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.eos() == id_eot);
  CHECK(tok.is_end_of_generation(id_eot));
  CHECK(tok.is_end_of_generation(id_im_end));  // a control token named like an end marker
  CHECK_FALSE(tok.is_end_of_generation(id_think));
  CHECK_FALSE(tok.is_end_of_generation(id_the));
}

TEST_CASE("stream decoder holds back split characters", "[tokenizer][bpe]") {
  const tokenizer tok = make_tokenizer();
  SECTION("a 4-byte emoji over single-byte tokens comes out whole, once") {
    stream_decoder dec(tok);
    std::string all;
    CHECK(dec.push('a') == "a");
    for (token_id b : bytes_of("\xF0\x9F\x98\x80")) {
      const std::string out = dec.push(b);
      if (b != 0x80) CHECK(out.empty());
      all += out;
    }
    CHECK(all == "\xF0\x9F\x98\x80");
    CHECK(dec.flush().empty());
  }
  SECTION("a dangling partial character flushes as U+FFFD") {
    stream_decoder dec(tok);
    CHECK(dec.push(0xE4).empty());
    CHECK(dec.push(0xBD).empty());
    CHECK(dec.flush() == "\xEF\xBF\xBD");
    CHECK(dec.flush().empty());
  }
  SECTION("bytes that can never form a character are replaced at once") {
    stream_decoder dec(tok);
    CHECK(dec.push(0xFF) == "\xEF\xBF\xBD");
    CHECK(dec.push(0xE4) == "");
    CHECK(dec.push('x') == "\xEF\xBF\xBDx");  // the lead byte is cut off by 'x'
  }
  SECTION("control tokens render only when asked") {
    stream_decoder quiet(tok), loud(tok, true);
    CHECK(quiet.push(id_eot).empty());
    CHECK(loud.push(id_eot) == "<|endoftext|>");
  }
}
