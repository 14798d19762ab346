#include <catch2/catch.hpp>

#include <random>

#include "model/tokenizer.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

// Ids 0..2 are <unk>, <s>, </s>; 3..258 the byte tokens <0x00>..<0xFF> (byte b is id 3 + b);
// then the pieces below, in order from id 259, with their scores (higher merges first).
constexpr token_id byte_id(int b) {
  return 3 + b;
}

const std::vector<std::pair<std::string, float>> pieces = {
    {"\u2581", -5.0f},        // 259 ▁
    {"h", -10.0f},            // 260
    {"e", -10.0f},            // 261
    {"l", -10.0f},            // 262
    {"o", -10.0f},            // 263
    {"he", -3.0f},            // 264
    {"ll", -2.0f},            // 265
    {"llo", -1.0f},           // 266
    {"hello", -0.5f},         // 267
    {"\u2581hello", -0.1f},   // 268 ▁hello
    {"ab", -4.0f},            // 269
    {"bc", -4.0f},            // 270
    {"a", -10.0f},            // 271
    {"\u2581\u2581", -6.0f},  // 272 ▁▁
    {"<think>", 0.0f},        // 273 user-defined
    {"<|im_end|>", 0.0f},     // 274 control, ends a turn by its name
};
constexpr token_id id_space = 259, id_he = 264, id_ll = 265, id_hello = 267, id_space_hello = 268,
                   id_ab = 269, id_a = 271, id_space2 = 272, id_think = 273, id_im_end = 274;

vocab_spec make_spec() {
  vocab_spec v;
  v.kind = tokenizer_kind::spm;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.types = {token_type::unknown, token_type::control, token_type::control};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    v.tokens.push_back(text);
    v.types.push_back(token_type::byte);
    v.scores.push_back(0);
  }
  for (const auto& [text, score] : pieces) {
    v.tokens.push_back(text);
    v.types.push_back(token_type::normal);
    v.scores.push_back(score);
  }
  v.types[size_t(id_think)] = token_type::user_defined;
  v.types[size_t(id_im_end)] = token_type::control;
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  v.add_bos = true;
  return v;
}

tokenizer make_tokenizer(vocab_spec v = make_spec()) {
  auto t = tokenizer::create(std::move(v));
  REQUIRE(t.ok());
  return std::move(t).value();
}

using ids = std::vector<token_id>;
const encode_options no_bos{false, false};

}  // namespace

TEST_CASE("spm merges the highest-scoring pair first", "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.kind() == tokenizer_kind::spm);
  // "hello" -> "▁hello": ▁ h e l l o. Candidate pairs: he (-3), ll (-2). ll wins, then llo (-1) beats he;
  // then he, then he+llo = hello (-0.5), then ▁+hello = ▁hello (-0.1).
  CHECK(tok.encode("hello", no_bos) == ids{id_space_hello});
  // "hell" -> ▁ h e l l: ll, then he; "hell", "▁he" are not tokens, so it stays ▁ he ll.
  CHECK(tok.encode("hell", no_bos) == ids{id_space, id_he, id_ll});
  // "abc" -> ▁ a b c: ab and bc tie at -4, the leftmost (ab) merges; "abc" and "▁ab" are not tokens,
  // and "c" is not a token either, so it falls back to its byte <0x63>.
  CHECK(tok.encode("abc", no_bos) == ids{id_space, id_ab, byte_id('c')});
  // Spaces become ▁ ("hello hello" -> ▁hello ▁hello); two spaces pair up as ▁▁ (-6) only if nothing better.
  CHECK(tok.encode("hello hello", no_bos) == ids{id_space_hello, id_space_hello});
  CHECK(tok.encode(" a", no_bos) == ids{id_space2, id_a});
  // é (C3 A9) is not in the vocabulary: its bytes.
  CHECK(tok.encode("\xC3\xA9", no_bos) == ids{id_space, byte_id(0xC3), byte_id(0xA9)});
  CHECK(tok.encode("", no_bos).empty());
}

TEST_CASE("spm adds BOS when the vocabulary and the caller ask", "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.encode("hello") == ids{1, id_space_hello});
  CHECK(tok.encode("") == ids{1});
  vocab_spec v = make_spec();
  v.add_bos = false;
  auto t2 = tokenizer::create(v);
  REQUIRE(t2.ok());
  CHECK(t2->encode("hello") == ids{id_space_hello});
}

TEST_CASE("spm control tokens only with parse_special, user-defined ones always", "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  // Text after a special token gets the space prefix again, as in llama.cpp.
  CHECK(tok.encode("hello</s>hello", {true, true}) == ids{1, id_space_hello, 2, id_space_hello});
  // As plain text "</s>" has no pieces: bytes; the "hello" after it has no space before it.
  CHECK(tok.encode("hello</s>hello", {true, false}) ==
        ids{1, id_space_hello, byte_id('<'), byte_id('/'), byte_id('s'), byte_id('>'), id_hello});
  // A user-defined token is text a converter added: matched either way (llama.cpp, Hugging Face),
  // and the text after it is a new stretch with its own space prefix.
  CHECK(tok.encode("<think>", {false, true}) == ids{id_think});
  CHECK(tok.encode("<think>", {false, false}) == ids{id_think});
  CHECK(tok.encode("<think>hello", {false, false}) == ids{id_think, id_space_hello});
  CHECK(tok.encode("<|im_end|>", {false, false}) != ids{id_im_end});
}

TEST_CASE("spm decoding turns ▁ into spaces and drops the space prefix of the first token only",
          "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.token_bytes(id_space_hello) == " hello");
  CHECK(tok.token_bytes(byte_id(0xC3)) == "\xC3");
  CHECK(tok.token_bytes(1).empty());
  CHECK(tok.token_bytes(1, true) == "<s>");
  CHECK(tok.token_bytes(id_think) == "<think>");
  CHECK(tok.token_bytes(9999).empty());
  // llama_detokenize: the first token loses one leading space, nothing after it does.
  CHECK(tok.decode(ids{id_space_hello, id_space_hello}) == "hello hello");
  CHECK(tok.decode(ids{id_space2, id_a}) == " a");
  // A leading BOS is that first token (it renders nothing), so the space after it stays: llama.cpp's rule.
  CHECK(tok.decode(ids{1, id_space_hello, id_space_hello}) == " hello hello");
  CHECK(tok.decode(ids{1, id_space_hello, 2, id_space_hello}, true) == "<s> hello</s> hello");
}

TEST_CASE("spm without a lone ▁ piece falls back to the bytes of ▁, and decodes them as ▁",
          "[tokenizer][spm]") {
  vocab_spec v = make_spec();
  v.tokens[size_t(id_space)] = "<unused_0>";
  v.types[size_t(id_space)] = token_type::unused;
  const tokenizer tok = make_tokenizer(std::move(v));
  const ids space_bytes{byte_id(0xE2), byte_id(0x96), byte_id(0x81)};
  ids expected = space_bytes;
  expected.insert(expected.end(), {id_he, id_ll});
  CHECK(tok.encode("hell", no_bos) == expected);  // ▁ he ll, and "▁" is no token
  CHECK(tok.decode(expected) == "\u2581hell");    // the bytes are a "▁", not a space (llama.cpp)
  CHECK(tok.encode("hello", no_bos) == ids{id_space_hello});  // "▁h" is no piece either, but merges reach it
  CHECK(tok.token_bytes(id_space, true).empty());             // unused tokens have no piece
}

TEST_CASE("spm byte fallback takes a \"<0xNN>\" token of any type, then the byte's own token",
          "[tokenizer][spm]") {
  vocab_spec v = make_spec();
  v.types[size_t(byte_id('c'))] = token_type::normal;  // still spelled <0x63>: llama.cpp uses it
  const tokenizer tok = make_tokenizer(v);
  CHECK(tok.encode("abc", no_bos) == ids{id_space, id_ab, byte_id('c')});
  v.tokens[size_t(byte_id('a'))] = "<0x61";    // no <0x61> now, but "a" is a token
  v.tokens[size_t(byte_id(0xAB))] = "<0xab>";  // lower-case hex is not the name llama.cpp looks for
  const tokenizer t2 = make_tokenizer(v);
  // "\xC3" "a" is one symbol (the lead byte takes two bytes), no token, so byte by byte.
  CHECK(t2.encode("\xC3"
                  "a",
                  no_bos) == ids{id_space, byte_id(0xC3), id_a});
  CHECK(t2.encode("\xAB", no_bos) == ids{id_space, 0});  // unk, where llama.cpp would throw
}

TEST_CASE("spm add_space_prefix off: no space before the text, none dropped after", "[tokenizer][spm]") {
  vocab_spec v = make_spec();
  v.add_space_prefix = false;
  const tokenizer tok = make_tokenizer(std::move(v));
  CHECK(tok.encode("hello", no_bos) == ids{id_hello});
  CHECK(tok.encode("hello</s>hello", {false, true}) == ids{id_hello, 2, id_hello});
  CHECK(tok.decode(ids{id_space_hello}) == " hello");
}

// The encoder's spaces, and a literal "▁", decode as spaces; bytes of "▁" that fell back (the
// rest of invalid UTF-8 took them) as "▁". Both sides with every "▁" a space, then.
std::string spaces_for_blocks(std::string text) {
  for (size_t at; (at = text.find("\u2581")) != std::string::npos;) text.replace(at, 3, " ");
  return text;
}

TEST_CASE("spm round-trips Unicode text through pieces and byte fallback", "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  const std::vector<std::string> texts = {
      "hello world",
      "  leading and trailing  ",
      "tabs\tand\nnew\r\nlines\n\n",
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB family "
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7",
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C",  // 你好世界
      "e\xCC\x81 combining",                               // e + U+0301
      "bad \xFF\xFE"
      "abcd bytes, cut \xE2\x82",  // invalid UTF-8, no space in a lead byte's reach
      "</s><s> as text",
  };
  for (const auto& text : texts) {
    CAPTURE(text);
    CHECK(tok.decode(tok.encode(text, no_bos)) == text);
  }
  // Special tokens render back as text; each stretch after one has its own prefix space.
  CHECK(tok.decode(tok.encode("</s><s><think> as text", {false, true}), true) == "</s><s><think>  as text");
  // A lead byte takes the next bytes with it whatever they are, here the first two of a space's "▁".
  CHECK(tok.decode(tok.encode("\xC3 x", no_bos)) == "\xC3\u2581x");
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  for (int round = 0; round < 200; ++round) {
    std::string text(rng() % 64, '\0');
    for (char& c : text) c = static_cast<char>(rng() & 0xff);
    REQUIRE(spaces_for_blocks(tok.decode(tok.encode(text, no_bos))) == spaces_for_blocks(text));
  }
}

TEST_CASE("spm vocabulary validation", "[tokenizer][spm]") {
  vocab_spec v = make_spec();
  v.scores.pop_back();
  auto r = tokenizer::create(v);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == errc::malformed);
  CHECK(r.error().message.find("scores") != std::string::npos);

  v = make_spec();
  v.tokens[3 + 0x41] = "<0x41";  // no token spells <0x41>, and "A" is no token either
  v.unk = no_token;
  r = tokenizer::create(v);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("<0x41>") != std::string::npos);

  v.unk = 0;  // with an unk token the gap is tolerated: 'A' falls back to unk
  r = tokenizer::create(v);
  REQUIRE(r.ok());
  CHECK(r->encode("A", no_bos) == ids{id_space, 0});

  v = make_spec();
  v.eos = 100000;
  r = tokenizer::create(v);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("eos") != std::string::npos);
}

TEST_CASE("spm end of generation", "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  CHECK(tok.is_end_of_generation(2));
  CHECK(tok.is_end_of_generation(id_im_end));
  CHECK_FALSE(tok.is_end_of_generation(1));
  CHECK_FALSE(tok.is_end_of_generation(id_space_hello));
  CHECK_FALSE(tok.is_end_of_generation(-1));
}

TEST_CASE("spm stream decoding keeps every leading space and joins split characters", "[tokenizer][spm]") {
  const tokenizer tok = make_tokenizer();
  // The tokens continue a prompt: "▁hello" after it is " hello", as llama.cpp streams it.
  stream_decoder dec(tok);
  CHECK(dec.push(1).empty());
  CHECK(dec.push(id_space_hello) == " hello");
  CHECK(dec.push(id_space_hello) == " hello");
  CHECK(dec.push(byte_id(0xC3)).empty());
  CHECK(dec.push(byte_id(0xA9)) == "\xC3\xA9");
  CHECK(dec.flush().empty());
}
