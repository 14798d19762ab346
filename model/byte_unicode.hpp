#pragma once
// GPT-2's byte-to-unicode alphabet, used by byte-level BPE vocabularies (Llama 3, Qwen 2):
// every byte maps to one printable code point so that token texts are valid UTF-8.
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves; the other 68 bytes
// map to U+0100 + n in byte order (so ' ' -> 'Ġ' U+0120, '\n' -> 'Ċ' U+010A).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hearth {

//! The code point byte b stands for.
char32_t byte_to_codepoint(uint8_t b);
//! The byte a code point stands for, or nullopt when it is not in the alphabet.
std::optional<uint8_t> codepoint_to_byte(char32_t cp);
//! UTF-8 text of a byte string in the alphabet (what a byte-level BPE token text looks like).
std::string bytes_to_bpe_text(std::string_view bytes);
//! The bytes a byte-level BPE token text stands for; nullopt if it holds a code point outside
//! the alphabet or invalid UTF-8.
std::optional<std::string> bpe_text_to_bytes(std::string_view text);

}  // namespace hearth
