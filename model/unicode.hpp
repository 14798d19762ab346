#pragma once
// UTF-8 decoding and encoding, and the Unicode classes the BPE pre-tokenizers need.
// Decoding never fails: bytes that do not start a valid sequence come back one at a time as
// `invalid`, so callers can keep them as they are (byte-level BPE round-trips any byte string).

#include <cstddef>
#include <string>
#include <string_view>

namespace hearth {

enum class utf8_status {
  ok,         //!< a well-formed sequence (no overlongs, surrogates or code points past U+10FFFF)
  truncated,  //!< a valid prefix of a sequence that the end of the text cuts short
  invalid,    //!< a byte that cannot start a well-formed sequence here
};

struct utf8_char {
  char32_t cp;  //!< the code point; U+FFFD unless status is ok
  size_t len;   //!< bytes consumed: the sequence (ok), the prefix (truncated), or 1 (invalid)
  utf8_status status;
};

constexpr char32_t replacement_char = U'\uFFFD';

//! Decodes the character starting at text[pos] (pos < text.size()).
utf8_char decode_utf8(std::string_view text, size_t pos);
//! Appends the UTF-8 encoding of cp; surrogates and values past U+10FFFF become U+FFFD.
void append_utf8(std::string& out, char32_t cp);

//! The text as llama.cpp's byte-level BPE reads it (unicode_cpts_from_utf8, then back to UTF-8):
//! a byte that does not start a sequence its decoder accepts becomes U+FFFD and the next byte
//! starts again. That decoder checks lead and continuation bits only, so an overlong form comes
//! back shortest and a surrogate stays; past U+10FFFF (llama.cpp throws there) gives U+FFFD.
//! Valid UTF-8 comes back unchanged.
std::string llama_cpp_utf8(std::string_view text);

bool is_letter(char32_t cp);      //!< \p{L}
bool is_number(char32_t cp);      //!< \p{N}
bool is_whitespace(char32_t cp);  //!< \s (Unicode White_Space)

}  // namespace hearth
