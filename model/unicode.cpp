#include "model/unicode.hpp"

#include <algorithm>

#include "model/unicode_tables.hpp"

namespace hearth {
namespace {

using unicode_tables::cp_range;

bool in_ranges(const cp_range* ranges, size_t count, char32_t cp) {
  const cp_range* end = ranges + count;
  // First range whose last code point is >= cp; cp is in the class when that range starts at or before it.
  const cp_range* it =
      std::lower_bound(ranges, end, cp, [](const cp_range& r, char32_t c) { return r.last < c; });
  return it != end && it->first <= cp;
}

bool is_continuation(uint8_t b) {
  return (b & 0xc0) == 0x80;
}

// Allowed range of the second byte after lead byte c0 (RFC 3629 table), which rules out overlongs,
// surrogates and code points past U+10FFFF without decoding first.
bool second_byte_ok(uint8_t c0, uint8_t c1) {
  switch (c0) {
    case 0xe0:
      return c1 >= 0xa0 && c1 <= 0xbf;
    case 0xed:
      return c1 >= 0x80 && c1 <= 0x9f;
    case 0xf0:
      return c1 >= 0x90 && c1 <= 0xbf;
    case 0xf4:
      return c1 >= 0x80 && c1 <= 0x8f;
    default:
      return is_continuation(c1);
  }
}

// Sequence length announced by a lead byte, 0 when the byte can never start one.
size_t sequence_length(uint8_t c0) {
  if (c0 < 0x80) return 1;
  if (c0 >= 0xc2 && c0 <= 0xdf) return 2;
  if (c0 >= 0xe0 && c0 <= 0xef) return 3;
  if (c0 >= 0xf0 && c0 <= 0xf4) return 4;
  return 0;
}

}  // namespace

utf8_char decode_utf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t c0 = byte(0);
  const size_t len = sequence_length(c0);
  if (len == 1) return {c0, 1, utf8_status::ok};
  if (len == 0) return {replacement_char, 1, utf8_status::invalid};

  const size_t avail = std::min(len, text.size() - pos);
  for (size_t i = 1; i < avail; ++i) {
    const bool ok = i == 1 ? second_byte_ok(c0, byte(1)) : is_continuation(byte(i));
    if (!ok) return {replacement_char, 1, utf8_status::invalid};
  }
  if (avail < len) return {replacement_char, avail, utf8_status::truncated};

  char32_t cp = c0 & (0x7f >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (byte(i) & 0x3f);
  return {cp, len, utf8_status::ok};
}

namespace {

// The shortest encoding of cp <= U+10FFFF, surrogates included (callers decide about those).
void encode_utf8(std::string& out, char32_t cp) {
  const auto put = [&](uint32_t v) { out += static_cast<char>(v); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xc0 | (cp >> 6));
    put(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    put(0xe0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3f));
    put(0x80 | (cp & 0x3f));
  } else {
    put(0xf0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3f));
    put(0x80 | ((cp >> 6) & 0x3f));
    put(0x80 | (cp & 0x3f));
  }
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  encode_utf8(out, (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ? replacement_char : cp);
}

std::string llama_cpp_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    const size_t len = lead < 0x80   ? 1
                       : lead < 0xc0 ? 0
                       : lead < 0xe0 ? 2
                       : lead < 0xf0 ? 3
                       : lead < 0xf8 ? 4
                                     : 0;
    bool ok = len > 0 && pos + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<uint8_t>(text[pos + k]) & 0xc0) == 0x80;
    if (!ok) {
      append_utf8(out, replacement_char);
      ++pos;
      continue;
    }
    // The code point from the payload bits, then its shortest encoding (surrogates included).
    uint32_t cp = len == 1 ? lead : lead & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) cp = cp << 6 | (static_cast<uint8_t>(text[pos + k]) & 0x3f);
    encode_utf8(out, cp > 0x10ffff ? replacement_char : cp);
    pos += len;
  }
  return out;
}

bool is_letter(char32_t cp) {
  return in_ranges(unicode_tables::letter, unicode_tables::letter_count, cp);
}
bool is_number(char32_t cp) {
  return in_ranges(unicode_tables::number, unicode_tables::number_count, cp);
}
bool is_whitespace(char32_t cp) {
  return in_ranges(unicode_tables::whitespace, unicode_tables::whitespace_count, cp);
}

}  // namespace hearth
