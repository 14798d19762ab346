#include "model/byte_unicode.hpp"

#include <array>

namespace hearth {
namespace {

bool maps_to_itself(uint8_t b) {
  return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
}

struct tables {
  std::array<char32_t, 256> to_cp{};
  std::array<int16_t, 0x144> to_byte{};  // every code point of the alphabet is below U+0144

  tables() {
    to_byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const auto u = static_cast<uint8_t>(b);
      to_cp[u] = maps_to_itself(u) ? char32_t(u) : next++;
      to_byte[to_cp[u]] = static_cast<int16_t>(b);
    }
  }
};

const tables& the_tables() {
  static const tables t;
  return t;
}

void append_utf8(std::string& out, char32_t cp) {
  // Only code points below U+0800 occur in the alphabet: one or two bytes.
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace

char32_t byte_to_codepoint(uint8_t b) {
  return the_tables().to_cp[b];
}

std::optional<uint8_t> codepoint_to_byte(char32_t cp) {
  if (cp >= the_tables().to_byte.size() || the_tables().to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(the_tables().to_byte[cp]);
}

std::string bytes_to_bpe_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> bpe_text_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c0 = static_cast<uint8_t>(text[i]);
    char32_t cp;
    if (c0 < 0x80) {
      cp = c0;
      i += 1;
    } else if ((c0 & 0xe0) == 0xc0 && i + 1 < text.size() &&
               (static_cast<uint8_t>(text[i + 1]) & 0xc0) == 0x80) {
      cp = (char32_t(c0 & 0x1f) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3f);
      i += 2;
    } else {
      return std::nullopt;  // longer sequences are never in the alphabet
    }
    auto b = codepoint_to_byte(cp);
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
  }
  return out;
}

}  // namespace hearth
