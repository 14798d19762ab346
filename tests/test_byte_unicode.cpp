#include <catch2/catch.hpp>

#include "model/byte_unicode.hpp"

using namespace hearth;

TEST_CASE("GPT-2 byte alphabet maps every byte to one code point and back", "[byte_unicode]") {
  CHECK(byte_to_codepoint(' ') == U'\u0120');   // 'Ġ'
  CHECK(byte_to_codepoint('\n') == U'\u010A');  // 'Ċ'
  CHECK(byte_to_codepoint('a') == U'a');
  CHECK(byte_to_codepoint(0xad) == U'\u0143');  // soft hyphen is the last remapped byte
  for (int b = 0; b < 256; ++b) {
    REQUIRE(codepoint_to_byte(byte_to_codepoint(static_cast<uint8_t>(b))) == b);
  }
  CHECK_FALSE(codepoint_to_byte(U'\u0144'));
  CHECK_FALSE(codepoint_to_byte(U'\u4e2d'));
}

TEST_CASE("byte strings round-trip through BPE token text", "[byte_unicode]") {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  CHECK(bpe_text_to_bytes(bytes_to_bpe_text(all)) == all);
  CHECK(bytes_to_bpe_text(" hello\n") == "\xc4\xa0hello\xc4\x8a");
  CHECK_FALSE(bpe_text_to_bytes("\xe4\xb8\xad"));  // a CJK character is not in the alphabet
  CHECK_FALSE(bpe_text_to_bytes("\xc4"));          // truncated UTF-8
}
