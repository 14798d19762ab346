#pragma once
// Byte-level BPE pre-tokenizers: split text into the pieces that merges never cross, equivalent to
// the regular expressions llama.cpp uses for each `tokenizer.ggml.pre` name (hand-written, as
// llama.cpp's own fast paths are, so no regex engine is needed):
//   gpt2, default:      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama-bpe, llama3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//                       | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:              as llama-bpe with \p{N} (single digits)
//   smollm:             every \p{N} split off alone first, then gpt2 on the rest
//   gpt-4o (Phi-4-mini): [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}
//                       | ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//                       with C = (?i:'s|'t|'re|'ve|'m|'ll|'d). The tokenizer's own regex has
//                       U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and W = [\p{Ll}\p{Lm}\p{Lo}\p{M}];
//                       llama.cpp runs U = \p{L} but a-z, W = \p{L} but A-Z (its std::regex sees
//                       every non-ASCII letter as one byte), so only ASCII letters have a case
//                       and marks are not part of words. Hearth splits as llama.cpp does.
// Bytes that are not valid UTF-8 count as one character each, of no class (like punctuation), so
// the pieces always cover the input exactly; an encoded surrogate, which llama.cpp decodes, is one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

enum class pretokenizer_kind { gpt2, llama3, qwen2, smollm, gpt4o };

//! The splitter for a GGUF `tokenizer.ggml.pre` name, or nullopt when Hearth has none.
std::optional<pretokenizer_kind> pretokenizer_from_name(std::string_view name);
//! The names pretokenizer_from_name accepts, comma-separated (for error messages).
std::string supported_pretokenizer_names();
//! Splits text into consecutive non-empty pieces whose concatenation is text.
std::vector<std::string_view> pretokenize(pretokenizer_kind kind, std::string_view text);

}  // namespace hearth
