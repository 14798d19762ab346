#include "model/pretokenizer.hpp"

#include <array>
#include <cstdint>
#include <utility>

#include "model/unicode.hpp"

namespace hearth {
namespace {

// `none` marks positions outside the range being split, so look-aheads stop at its end.
enum class cclass { letter, number, space, other, none };

struct character {
  size_t offset;  // bytes into the text
  char32_t cp;    // U+FFFD for an invalid byte
  cclass cls;
};

constexpr char32_t out_of_range = 0xffffffff;

cclass classify(const utf8_char& c) {
  if (c.status != utf8_status::ok) return cclass::other;
  if (is_letter(c.cp)) return cclass::letter;
  if (is_number(c.cp)) return cclass::number;
  if (is_whitespace(c.cp)) return cclass::space;
  return cclass::other;
}

// An encoded surrogate (ED A0..BF 80..BF) is one code point to llama.cpp's decoder, and
// llama_cpp_utf8 keeps it: one character of no class, so that it may lead a word as there.
bool is_encoded_surrogate(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  return pos + 3 <= text.size() && byte(0) == 0xed && byte(1) >= 0xa0 && byte(1) <= 0xbf &&
         (byte(2) & 0xc0) == 0x80;
}

std::vector<character> split_characters(std::string_view text) {
  std::vector<character> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    utf8_char c = decode_utf8(text, pos);
    if (c.status != utf8_status::ok) c.len = is_encoded_surrogate(text, pos) ? 3 : 1;  // else byte by byte
    chars.push_back({pos, c.cp, classify(c)});
    pos += c.len;
  }
  return chars;
}

char32_t ascii_lower(char32_t cp) {
  return cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp;
}

// One range [begin, end) of characters being split; mirrors llama.cpp's per-offset lambdas.
class splitter {
 public:
  splitter(std::string_view text, const std::vector<character>& chars, std::vector<std::string_view>& out,
           size_t begin, size_t end)
      : text_(text), chars_(chars), out_(out), begin_(begin), end_(end), prev_(begin) {}

  void run_gpt2();
  void run_llama3(size_t max_digits);
  void run_gpt4o();

 private:
  cclass cls(size_t i) const { return i >= begin_ && i < end_ ? chars_[i].cls : cclass::none; }
  char32_t cp(size_t i) const { return i >= begin_ && i < end_ ? chars_[i].cp : out_of_range; }
  bool is_cr_or_lf(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }
  size_t byte_offset(size_t i) const { return i < chars_.size() ? chars_[i].offset : text_.size(); }

  // Ends the current piece at character `end`; returns its length in characters.
  size_t emit(size_t end) {
    const size_t n = end - prev_;
    if (n > 0) out_.push_back(text_.substr(byte_offset(prev_), byte_offset(end) - byte_offset(prev_)));
    prev_ = end;
    return n;
  }
  size_t contraction_length(size_t pos, bool ignore_case) const;
  size_t cased_word_end(size_t pos) const;
  // llama.cpp's gpt-4o regex tells case with [^a-z] and [^A-Z] after a \p{L} look-ahead, on text
  // where every non-ASCII letter is one byte: only ASCII letters have a case, the others both.
  bool upper_or_caseless(size_t i) const {
    return cls(i) == cclass::letter && !(cp(i) >= 'a' && cp(i) <= 'z');
  }
  bool lower_or_caseless(size_t i) const {
    return cls(i) == cclass::letter && !(cp(i) >= 'A' && cp(i) <= 'Z');
  }
  size_t numbers_punctuation_spaces(size_t pos, size_t max_digits, bool slash_trails);
  size_t run_of(size_t pos, cclass c) const {
    while (cls(pos) == c) ++pos;
    return pos;
  }
  // \s+(?!\S) | \s+ at pos, after the callers' own whitespace rules; also the no-match fallback.
  size_t whitespace_or_single(size_t pos, size_t n_spaces) {
    if (n_spaces > 1 && cp(pos + n_spaces) != out_of_range) return pos + emit(pos + n_spaces - 1);
    if (n_spaces > 0) return pos + emit(pos + n_spaces);
    return pos + emit(pos + 1);
  }

  std::string_view text_;
  const std::vector<character>& chars_;
  std::vector<std::string_view>& out_;
  size_t begin_, end_, prev_;
};

// 's 't 're 've 'm 'll 'd; 0 when none starts at pos.
size_t splitter::contraction_length(size_t pos, bool ignore_case) const {
  if (cp(pos) != '\'' || pos + 1 >= end_) return 0;
  const auto at = [&](size_t i) { return ignore_case ? ascii_lower(cp(i)) : cp(i); };
  const char32_t c1 = at(pos + 1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= end_) return 0;
  const char32_t c2 = at(pos + 2);
  const bool two = (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l');
  return two ? 3 : 0;
}

void splitter::run_gpt2() {
  for (size_t pos = begin_; pos < end_;) {
    if (size_t n = contraction_length(pos, false)) {
      pos += emit(pos + n);
      continue;
    }
    const size_t lead = cp(pos) == ' ' ? 1 : 0;  // the optional space before a run
    const cclass c2 = cls(pos + lead);
    //  ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+
    if (c2 == cclass::letter || c2 == cclass::number || c2 == cclass::other) {
      pos += emit(run_of(pos + lead, c2));
      continue;
    }
    const size_t n_spaces = run_of(pos, cclass::space) - pos;
    pos = whitespace_or_single(pos, n_spaces);
  }
}

void splitter::run_llama3(size_t max_digits) {
  for (size_t pos = begin_; pos < end_;) {
    if (size_t n = contraction_length(pos, true)) {
      pos += emit(pos + n);
      continue;
    }
    const cclass c = cls(pos);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!is_cr_or_lf(pos) && c != cclass::number && (c == cclass::letter || cls(pos + 1) == cclass::letter)) {
      pos = run_of(pos + 1, cclass::letter);
      emit(pos);
      continue;
    }
    pos = numbers_punctuation_spaces(pos, max_digits, false);
  }
}

// The end of [\p{Lu}..]*[\p{Ll}..]+ | [\p{Lu}..]+[\p{Ll}..]* at pos as llama.cpp's std::regex
// backtracks through it (upper_or_caseless for the first class, lower_or_caseless for the
// second); 0 when neither matches.
size_t splitter::cased_word_end(size_t pos) const {
  size_t upper_end = pos;
  while (upper_or_caseless(upper_end)) ++upper_end;
  size_t end = upper_end;
  if (lower_or_caseless(end)) {  // the greedy upper run, then lower case
    while (lower_or_caseless(end)) ++end;
    return end;
  }
  // The upper run gives back up to its last caseless letter, which then is the lower part.
  for (end = upper_end; end > pos; --end) {
    if (lower_or_caseless(end - 1)) return end;
  }
  return upper_end > pos ? upper_end : 0;  // ASCII capitals only: the second alternative
}

void splitter::run_gpt4o() {
  for (size_t pos = begin_; pos < end_;) {
    // [^\r\n\p{L}\p{N}]? before a cased word, then (?i:'s|'t|'re|'ve|'m|'ll|'d)?
    const cclass c = cls(pos);
    const size_t lead = !is_cr_or_lf(pos) && c != cclass::letter && c != cclass::number ? 1 : 0;
    if (const size_t end = cased_word_end(pos + lead)) {
      pos = end + contraction_length(end, true);
      emit(pos);
      continue;
    }
    pos = numbers_punctuation_spaces(pos, 3, true);
  }
}

// The alternatives Llama 3 and gpt-4o share after their words, from one piece at pos:
// \p{N}{1,max_digits} | ?[^\s\p{L}\p{N}]+[\r\n]* (gpt-4o: [\r\n/]*) |\s*[\r\n]+|\s+(?!\S)|\s+
size_t splitter::numbers_punctuation_spaces(size_t pos, size_t max_digits, bool slash_trails) {
  if (cls(pos) == cclass::number) return pos + emit(std::min(run_of(pos, cclass::number), pos + max_digits));
  const size_t lead = cp(pos) == ' ' ? 1 : 0;
  if (cls(pos + lead) == cclass::other) {
    pos = run_of(pos + lead, cclass::other);
    while (is_cr_or_lf(pos) || (slash_trails && cp(pos) == '/')) ++pos;
    emit(pos);
    return pos;
  }
  // \s*[\r\n]+ takes the whitespace run up to its last CR/LF
  size_t n_spaces = 0, last_cr_lf_end = 0;
  for (; cls(pos + n_spaces) == cclass::space; ++n_spaces) {
    if (is_cr_or_lf(pos + n_spaces)) last_cr_lf_end = pos + n_spaces + 1;
  }
  if (last_cr_lf_end > 0) return pos + emit(last_cr_lf_end);
  return whitespace_or_single(pos, n_spaces);
}

struct named_kind {
  std::string_view name;
  pretokenizer_kind kind;
};

constexpr std::array<named_kind, 8> names = {{
    {"default", pretokenizer_kind::gpt2},
    {"gpt2", pretokenizer_kind::gpt2},
    {"llama-bpe", pretokenizer_kind::llama3},
    {"llama3", pretokenizer_kind::llama3},
    {"llama-v3", pretokenizer_kind::llama3},
    {"qwen2", pretokenizer_kind::qwen2},
    {"smollm", pretokenizer_kind::smollm},
    {"gpt-4o", pretokenizer_kind::gpt4o},
}};

}  // namespace

std::optional<pretokenizer_kind> pretokenizer_from_name(std::string_view name) {
  for (const auto& n : names) {
    if (n.name == name) return n.kind;
  }
  return std::nullopt;
}

std::string supported_pretokenizer_names() {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

std::vector<std::string_view> pretokenize(pretokenizer_kind kind, std::string_view text) {
  const std::vector<character> chars = split_characters(text);
  std::vector<std::string_view> out;
  switch (kind) {
    case pretokenizer_kind::gpt2:
      splitter(text, chars, out, 0, chars.size()).run_gpt2();
      break;
    case pretokenizer_kind::llama3:
      splitter(text, chars, out, 0, chars.size()).run_llama3(3);
      break;
    case pretokenizer_kind::qwen2:
      splitter(text, chars, out, 0, chars.size()).run_llama3(1);
      break;
    case pretokenizer_kind::gpt4o:
      splitter(text, chars, out, 0, chars.size()).run_gpt4o();
      break;
    case pretokenizer_kind::smollm:
      // llama.cpp applies `\p{N}` first: each digit is a piece, the text between them is split by gpt2.
      for (size_t begin = 0; begin < chars.size();) {
        size_t end = begin;
        while (end < chars.size() && chars[end].cls != cclass::number) ++end;
        if (end == begin) ++end;  // a lone digit
        splitter(text, chars, out, begin, end).run_gpt2();
        begin = end;
      }
      break;
  }
  return out;
}

}  // namespace hearth
