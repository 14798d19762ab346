#include "model/vocab_builder.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "model/bpe_trainer.hpp"
#include "model/byte_unicode.hpp"
#include "model/chat_template.hpp"
#include "model/synthetic_text.hpp"
#include "model/unicode.hpp"

namespace hearth {
namespace {

// Training text per vocabulary: big enough that the default seed yields every merge a 32000-token
// vocabulary needs, small enough that building one stays well under a second in Release.
constexpr size_t training_text_bytes = size_t{2} << 20;

// Llama 3's first ten special tokens, in its order (ids 128000..128009 there).
constexpr std::array llama3_specials = std::to_array<std::string_view>({
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|reserved_special_token_2|>",
    "<|reserved_special_token_3|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|reserved_special_token_4|>",
    "<|eot_id|>",
});
constexpr int32_t llama3_eos_offset = 1;
constexpr int32_t llama3_eot_offset = 9;
constexpr int n_llama3_reserved = 5;  // reserved_special_token_0..4 above

constexpr std::string_view spm_space = "\xe2\x96\x81";  // "▁" U+2581
constexpr size_t n_spm_chars = 95;                      // "▁" and '!'..'~'
static_assert(min_spm_vocab == 3 + 256 + n_spm_chars);
static_assert(min_bpe_vocab == 256 + llama3_specials.size());

std::vector<bpe_merge> learned_merges(uint64_t seed, size_t max_merges) {
  if (max_merges == 0) return {};
  const auto pieces = synthetic_word_counts(seed, training_text_bytes);
  return train_bpe(pieces, max_merges);
}

void add_token(vocab_spec& v, std::string text, token_type type, float score = 0.0f) {
  v.tokens.push_back(std::move(text));
  v.types.push_back(type);
  if (v.kind == tokenizer_kind::spm) v.scores.push_back(score);
}

// True when `bytes` is well-formed UTF-8 without C0 controls or DEL: text a SentencePiece
// vocabulary would hold as a piece.
bool is_spm_piece_text(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const utf8_char c = decode_utf8(bytes, i);
    if (c.status != utf8_status::ok || c.cp < 0x20 || c.cp == 0x7f) return false;
    i += c.len;
  }
  return true;
}

std::string spm_text(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    if (c == ' ') {
      out += spm_space;
    } else {
      out += c;
    }
  }
  return out;
}

std::string byte_token_text(int b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// make_bpe_vocab with another family's special tokens in place of Llama 3's first ones, no BOS
// added (neither Qwen's nor Phi-4-mini's tokenizer adds one) and the first special as bos and pad.
vocab_spec bpe_vocab_with_specials(uint64_t seed, uint32_t n_vocab, std::string pre,
                                   std::span<const std::string_view> specials, chat_format chat) {
  vocab_spec v = make_bpe_vocab(seed, n_vocab);
  v.pre = std::move(pre);
  v.add_bos = false;
  v.chat_template = chat_template_text(chat);
  for (size_t i = 0; i < specials.size(); ++i) v.tokens[size_t(v.bos) + i] = specials[i];
  v.pad = v.bos;
  return v;
}

}  // namespace

vocab_spec make_bpe_vocab(uint64_t seed, uint32_t n_vocab) {
  n_vocab = std::max(n_vocab, min_bpe_vocab);
  vocab_spec v;
  v.kind = tokenizer_kind::bpe;
  v.pre = "llama-bpe";
  v.add_bos = true;
  v.chat_template = chat_template_text(chat_format::llama3);
  v.tokens.reserve(n_vocab);
  for (int b = 0; b < 256; ++b) {
    add_token(v, bytes_to_bpe_text(std::string(1, static_cast<char>(b))), token_type::normal);
  }

  const size_t n_merges_wanted = n_vocab - min_bpe_vocab;
  for (const bpe_merge& m : learned_merges(seed, n_merges_wanted)) {
    const std::string left = bytes_to_bpe_text(m.left);
    const std::string right = bytes_to_bpe_text(m.right);
    add_token(v, left + right, token_type::normal);
    v.merges.push_back(left + " " + right);
  }

  const auto first_special = static_cast<token_id>(v.tokens.size());
  for (const std::string_view s : llama3_specials) add_token(v, std::string(s), token_type::control);
  v.bos = first_special;
  v.eos = first_special + llama3_eos_offset;
  v.eot = first_special + llama3_eot_offset;
  for (int n = n_llama3_reserved; v.tokens.size() < n_vocab; ++n) {
    add_token(v, "<|reserved_special_token_" + std::to_string(n) + "|>", token_type::control);
  }
  return v;
}

vocab_spec make_spm_vocab(uint64_t seed, uint32_t n_vocab) {
  n_vocab = std::max(n_vocab, min_spm_vocab);
  vocab_spec v;
  v.kind = tokenizer_kind::spm;
  v.add_bos = true;
  v.chat_template = chat_template_text(chat_format::llama2);
  v.tokens.reserve(n_vocab);
  add_token(v, "<unk>", token_type::unknown);
  add_token(v, "<s>", token_type::control);
  add_token(v, "</s>", token_type::control);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  for (int b = 0; b < 256; ++b) add_token(v, byte_token_text(b), token_type::byte);

  // Some merges end inside a UTF-8 sequence or hold a newline; they are skipped, so train a
  // quarter more than needed.
  const size_t n_pieces_wanted = n_vocab - min_spm_vocab;
  float rank = 0;
  for (const bpe_merge& m : learned_merges(seed, n_pieces_wanted + n_pieces_wanted / 4)) {
    if (v.tokens.size() == n_vocab - n_spm_chars) break;
    const std::string bytes = m.left + m.right;
    if (is_spm_piece_text(bytes)) add_token(v, spm_text(bytes), token_type::normal, -rank++);
  }
  // Single characters come last, as in Llama 2's vocabulary, so every ASCII character is a piece.
  add_token(v, std::string(spm_space), token_type::normal, -rank++);
  for (char c = '!'; c <= '~'; ++c) add_token(v, std::string(1, c), token_type::normal, -rank++);
  for (int n = 0; v.tokens.size() < n_vocab; ++n) {
    add_token(v, "<unused_" + std::to_string(n) + ">", token_type::unused);
  }
  return v;
}

vocab_spec make_qwen_vocab(uint64_t seed, uint32_t n_vocab) {
  constexpr std::array qwen_specials =
      std::to_array<std::string_view>({"<|endoftext|>", "<|im_start|>", "<|im_end|>"});
  vocab_spec v = bpe_vocab_with_specials(seed, n_vocab, "qwen2", qwen_specials, chat_format::chatml);
  v.eos = v.eot = v.bos + 2;
  return v;
}

namespace {

// make_spm_vocab's pieces with `specials` appended as control tokens, n_vocab in all, and the
// template of `format`; `first` is the id of specials[0].
vocab_spec spm_with_specials(uint64_t seed, uint32_t n_vocab, std::span<const std::string_view> specials,
                             chat_format format, token_id& first) {
  n_vocab = std::max(n_vocab, min_spm_vocab + static_cast<uint32_t>(specials.size()));
  vocab_spec v = make_spm_vocab(seed, n_vocab - static_cast<uint32_t>(specials.size()));
  v.chat_template = chat_template_text(format);
  first = static_cast<token_id>(v.tokens.size());
  for (const std::string_view s : specials) add_token(v, std::string(s), token_type::control);
  return v;
}

}  // namespace

vocab_spec make_phi3_vocab(uint64_t seed, uint32_t n_vocab) {
  constexpr std::array phi3_specials = std::to_array<std::string_view>(
      {"<|endoftext|>", "<|assistant|>", "<|system|>", "<|end|>", "<|user|>"});
  token_id first = 0;
  vocab_spec v = spm_with_specials(seed, n_vocab, phi3_specials, chat_format::phi3, first);
  v.eos = first;
  v.eot = first + 3;
  return v;
}

vocab_spec make_phi4_mini_vocab(uint64_t seed, uint32_t n_vocab) {
  constexpr std::array phi4_specials = std::to_array<std::string_view>(
      {"<|endoftext|>", "<|endofprompt|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>", "<|tool|>",
       "<|/tool|>", "<|tool_call|>", "<|/tool_call|>"});
  static_assert(phi4_specials.size() == llama3_specials.size());
  vocab_spec v = bpe_vocab_with_specials(seed, n_vocab, "gpt-4o", phi4_specials, chat_format::phi3);
  v.eos = v.bos;
  v.eot = v.bos + 3;
  return v;
}

vocab_spec make_gemma_vocab(uint64_t seed, uint32_t n_vocab) {
  constexpr std::array gemma_specials = std::to_array<std::string_view>({"<start_of_turn>", "<end_of_turn>"});
  token_id first = 0;
  vocab_spec v = spm_with_specials(seed, n_vocab, gemma_specials, chat_format::gemma, first);
  v.add_space_prefix = false;  // Gemma's converters write add_space_prefix false
  v.eot = first + 1;
  return v;
}

}  // namespace hearth
