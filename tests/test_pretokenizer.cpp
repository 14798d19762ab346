#include <catch2/catch.hpp>

#include <random>

#include "model/pretokenizer.hpp"
#include "model/unicode.hpp"
#include "test_seed.hpp"

using namespace hearth;
using pieces = std::vector<std::string>;

static pieces split(pretokenizer_kind kind, std::string_view text) {
  pieces out;
  for (std::string_view p : pretokenize(kind, text)) out.emplace_back(p);
  return out;
}

TEST_CASE("unicode classes and UTF-8 decoding", "[pretokenizer]") {
  CHECK(is_letter(U'a'));
  CHECK(is_letter(U'\u4f60'));        // 你 (Lo)
  CHECK(is_letter(U'\u00e9'));        // é
  CHECK_FALSE(is_letter(U'\u0301'));  // combining acute accent is a mark, not a letter
  CHECK(is_number(U'7'));
  CHECK(is_number(U'\u00bd'));  // ½ (No)
  CHECK(is_number(U'\u0663'));  // Arabic-Indic three (Nd)
  CHECK(is_whitespace(U'\t'));
  CHECK(is_whitespace(U'\u3000'));
  CHECK_FALSE(is_whitespace(U'\u001c'));  // Python's isspace says yes; \s does not
  CHECK_FALSE(is_letter(U'\U0001F600'));  // 😀 is a symbol

  CHECK(decode_utf8("\xF0\x9F\x98\x80", 0).cp == U'\U0001F600');
  CHECK(decode_utf8("\xF0\x9F\x98", 0).status == utf8_status::truncated);
  CHECK(decode_utf8("\xF0\x9F\x98", 0).len == 3);
  CHECK(decode_utf8("\xC0\xAF", 0).status == utf8_status::invalid);          // overlong '/'
  CHECK(decode_utf8("\xED\xA0\x80", 0).status == utf8_status::invalid);      // surrogate
  CHECK(decode_utf8("\xF4\x90\x80\x80", 0).status == utf8_status::invalid);  // past U+10FFFF
  CHECK(decode_utf8("\x80", 0).len == 1);
  std::string s;
  append_utf8(s, U'\U0001F600');
  CHECK(s == "\xF0\x9F\x98\x80");
}

TEST_CASE("text as llama.cpp's byte-level BPE reads it: invalid bytes become U+FFFD", "[pretokenizer]") {
  const std::string fffd = "\xEF\xBF\xBD";
  const std::string valid = "caf\xC3\xA9 \xF0\x9F\x98\x80";
  CHECK(llama_cpp_utf8(valid) == valid);
  CHECK(llama_cpp_utf8(std::string("a\0b", 3)) == std::string("a\0b", 3));
  CHECK(llama_cpp_utf8("\x80x") == fffd + "x");      // a lone continuation byte
  CHECK(llama_cpp_utf8("\xC3 x") == fffd + " x");    // a lead byte cut off by a space
  CHECK(llama_cpp_utf8("\xE2\x82") == fffd + fffd);  // cut off by the end: each byte, one U+FFFD
  CHECK(llama_cpp_utf8("\xF8\x88\x80\x80\x80") == fffd + fffd + fffd + fffd + fffd);  // no 5-byte forms
  // Its decoder checks only the bit patterns: an overlong form comes back shortest, a surrogate stays.
  CHECK(llama_cpp_utf8("\xC0\xAF") == "/");
  CHECK(llama_cpp_utf8("\xE0\x80\xAF") == "/");
  CHECK(llama_cpp_utf8("\xED\xA0\x80") == "\xED\xA0\x80");
  CHECK(llama_cpp_utf8("\xF4\x90\x80\x80") == fffd);  // past U+10FFFF, where llama.cpp throws
}

TEST_CASE("names map to splitters, and unknown names do not", "[pretokenizer]") {
  CHECK(pretokenizer_from_name("llama-bpe") == pretokenizer_kind::llama3);
  CHECK(pretokenizer_from_name("default") == pretokenizer_kind::gpt2);
  CHECK(pretokenizer_from_name("qwen2") == pretokenizer_kind::qwen2);
  CHECK_FALSE(pretokenizer_from_name("deepseek-coder"));
  CHECK(supported_pretokenizer_names().find("llama-bpe") != std::string::npos);
}

TEST_CASE("gpt2 splits", "[pretokenizer]") {
  const auto k = pretokenizer_kind::gpt2;
  CHECK(split(k, "Hello world") == pieces{"Hello", " world"});
  CHECK(split(k, "I'm you'LL") == pieces{"I", "'m", " you", "'", "LL"});  // contractions are case-sensitive
  CHECK(split(k, "we'll've") == pieces{"we", "'ll", "'ve"});
  CHECK(split(k, "12345 67") == pieces{"12345", " 67"});  // any number of digits
  // \s+(?!\S) leaves the last space of a run to the word after it
  CHECK(split(k, "a   b") == pieces{"a", "  ", " b"});
  CHECK(split(k, "a\n\nb") == pieces{"a", "\n", "\n", "b"});
  CHECK(split(k, "end  ") == pieces{"end", "  "});  // a run at the end stays whole
  CHECK(split(k, "Hi!!! ok?") == pieces{"Hi", "!!!", " ok", "?"});
  CHECK(split(k, "x1") == pieces{"x", "1"});
}

TEST_CASE("llama-bpe (Llama 3) splits", "[pretokenizer]") {
  const auto k = pretokenizer_kind::llama3;
  CHECK(split(k, "Hello world") == pieces{"Hello", " world"});
  CHECK(split(k, "I'M you'LL") == pieces{"I", "'M", " you", "'LL"});    // case-insensitive contractions
  CHECK(split(k, "12345") == pieces{"123", "45"});                      // at most three digits
  CHECK(split(k, "a 1234567") == pieces{"a", " ", "123", "456", "7"});  // no space before numbers
  CHECK(split(k, "a   b") == pieces{"a", "  ", " b"});
  CHECK(split(k, "Hello\n\nworld") == pieces{"Hello", "\n\n", "world"});  // \s*[\r\n]+
  CHECK(split(k, "x  \n  y") == pieces{"x", "  \n", " ", " y"});
  CHECK(split(k, "...\n\nfoo") == pieces{"...\n\n", "foo"});  // punctuation takes trailing newlines
  CHECK(split(k, " $100") == pieces{" $", "100"});
  CHECK(split(k, "\tword") == pieces{"\tword"});  // any non-letter/digit/newline may lead a word
  CHECK(split(k, "\r\nword") == pieces{"\r\n", "word"});
  CHECK(split(k, "hello 你好") == pieces{"hello", " 你好"});  // CJK are letters
  // 👋🏽 is a symbol plus a modifier symbol: one punctuation-like run with its leading space
  CHECK(split(k, "hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!") ==
        pieces{"hi", " \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"});
  // An invalid byte is a one-byte character of no class, so it may lead a word
  CHECK(split(k,
              "a\xFF"
              "b") == pieces{"a",
                             "\xFF"
                             "b"});
  CHECK(split(pretokenizer_kind::gpt2,
              "a\xFF"
              "b") == pieces{"a", "\xFF", "b"});
}

TEST_CASE("qwen2 and smollm split digits singly", "[pretokenizer]") {
  CHECK(split(pretokenizer_kind::qwen2, "12345") == pieces{"1", "2", "3", "4", "5"});
  CHECK(split(pretokenizer_kind::qwen2, "I'M 7x") == pieces{"I", "'M", " ", "7", "x"});
  CHECK(split(pretokenizer_kind::smollm, "abc123 d") == pieces{"abc", "1", "2", "3", " d"});
  CHECK(split(pretokenizer_kind::smollm, "a 12") == pieces{"a", " ", "1", "2"});
}

// Expected pieces from llama.cpp's own unicode_regex_split run on its gpt-4o expression.
TEST_CASE("gpt-4o (Phi-4-mini) splits words at ASCII case changes", "[pretokenizer]") {
  const auto k = pretokenizer_kind::gpt4o;
  CHECK(pretokenizer_from_name("gpt-4o") == k);
  CHECK(split(k, "HelloWorld iPhone") == pieces{"Hello", "World", " i", "Phone"});
  CHECK(split(k, "JSONParser ABCdef") == pieces{"JSONParser", " ABCdef"});  // capitals, then lower case
  CHECK(split(k, "DON'T we'll I'M you'LL") ==
        pieces{"DON'T", " we'll", " I'M", " you'LL"});  // contractions stay on
  CHECK(split(k, "DoN'T") == pieces{"Do", "N'T"});
  CHECK(split(k, "'s don\u2019t") == pieces{"'s", " don", "\u2019t"});  // only ' makes a contraction
  CHECK(split(k, "12345 a 1234567") == pieces{"123", "45", " a", " ", "123", "456", "7"});
  CHECK(split(k, "A1B2") == pieces{"A", "1", "B", "2"});
}

TEST_CASE("gpt-4o: non-ASCII letters have no case, marks are not letters, as in llama.cpp",
          "[pretokenizer]") {
  const auto k = pretokenizer_kind::gpt4o;
  CHECK(split(k, "\u00c4\u00d6\u00dc\u00e4\u00f6\u00fc") == pieces{"\u00c4\u00d6\u00dc\u00e4\u00f6\u00fc"});
  // The capitals give back their last caseless letter to the lower-case part: \u00c9COLE splits.
  CHECK(split(k, "\u00c9COLE \u00c9cole") == pieces{"\u00c9", "COLE", " \u00c9cole"});
  CHECK(split(k, "\u00c4BC's a\u00c4B") == pieces{"\u00c4", "BC's", " a\u00c4", "B"});
  CHECK(split(k, "Stra\u00dfe \u0391\u0392\u0393\u03b1\u03b2\u03b3") ==
        pieces{"Stra\u00dfe", " \u0391\u0392\u0393\u03b1\u03b2\u03b3"});
  CHECK(split(k, "\u01c5ungla \u02b0ello") == pieces{"\u01c5ungla", " \u02b0ello"});  // Lt, Lm
  CHECK(split(k, "e\u0301te") == pieces{"e", "\u0301te"});  // a combining mark may only lead a word
  CHECK(split(k, "\u0915\u094d\u0937") == pieces{"\u0915", "\u094d\u0937"});
  CHECK(split(k, "hello \u4f60\u597d") == pieces{"hello", " \u4f60\u597d"});
  CHECK(split(k, "\u0663\u0664\u0665\u0666") == pieces{"\u0663\u0664\u0665", "\u0666"});
}

TEST_CASE("gpt-4o: punctuation, slashes, newlines and spaces", "[pretokenizer]") {
  const auto k = pretokenizer_kind::gpt4o;
  CHECK(split(k, "...\n/\n/x") == pieces{"...\n/\n/", "x"});  // punctuation takes trailing CR, LF and /
  CHECK(split(k, "a/b//c") == pieces{"a", "/b", "//", "c"});
  CHECK(split(k, "!!abc !abc") == pieces{"!!", "abc", " !", "abc"});
  CHECK(split(k, "  Hello\tword") == pieces{" ", " Hello", "\tword"});
  CHECK(split(k, "\r\nword x  \n  y") == pieces{"\r\n", "word", " x", "  \n", " ", " y"});
  CHECK(split(k, "a\u00a0\u00a0b x\u0085y") == pieces{"a", "\u00a0", "\u00a0b", " x", "\u0085y"});
  CHECK(split(k, "end  ") == pieces{"end", "  "});
  CHECK(split(k, "hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!") ==
        pieces{"hi", " \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD!"});
}

TEST_CASE("pieces always cover the input exactly", "[pretokenizer]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  // Bytes biased towards the interesting classes: space, newline, apostrophe, digits, letters, UTF-8 leads.
  const std::string alphabet = " \n\r\t'sSlL1239aZ!./\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80\xFF\x80";
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int len = int(rng() % 40);
    for (int i = 0; i < len; ++i) {
      text += rng() % 4 == 0 ? static_cast<char>(rng() & 0xff) : alphabet[rng() % alphabet.size()];
    }
    for (auto k : {pretokenizer_kind::gpt2, pretokenizer_kind::llama3, pretokenizer_kind::qwen2,
                   pretokenizer_kind::smollm, pretokenizer_kind::gpt4o}) {
      std::string joined;
      for (std::string_view p : pretokenize(k, text)) {
        REQUIRE_FALSE(p.empty());
        joined += p;
      }
      REQUIRE(joined == text);
    }
  }
}
