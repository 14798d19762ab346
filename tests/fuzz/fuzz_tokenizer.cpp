// Encodes arbitrary bytes with a small byte-level BPE vocabulary (under every pre-tokenizer) and a
// small SentencePiece vocabulary, with and without special-token parsing, and checks that decoding
// gives the input back (bpe: with invalid UTF-8 as U+FFFD, as llama.cpp reads it; spm: with one
// prefix space per stretch of ordinary text, as llama.cpp adds them) and that the stream decoder
// emits valid UTF-8 that agrees with the pieces.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "model/byte_unicode.hpp"
#include "model/tokenizer.hpp"
#include "model/unicode.hpp"

using namespace hearth;
using hearth::fuzz::check;

namespace {

void add_token(vocab_spec& v, std::string text, token_type type, float score = 0) {
  v.tokens.push_back(std::move(text));
  v.types.push_back(type);
  v.scores.push_back(score);
}

void add_specials(vocab_spec& v) {
  v.bos = static_cast<token_id>(v.tokens.size());
  add_token(v, "<|begin|>", token_type::control);
  v.eos = static_cast<token_id>(v.tokens.size());
  add_token(v, "<|endoftext|>", token_type::control);
  add_token(v, "<|end", token_type::control);  // a prefix of another special
  add_token(v, "<think>", token_type::user_defined);
}

vocab_spec bpe_spec() {
  vocab_spec v;
  v.kind = tokenizer_kind::bpe;
  for (int b = 0; b < 256; ++b)
    add_token(v, bytes_to_bpe_text(std::string(1, static_cast<char>(b))), token_type::normal);
  for (const char* m : {"t h", "th e", "\u0120 th", "\u0120th e", "i n", "e r", "\u0120 a", "a n", "an d",
                        "\u010a \u010a", "1 2", "\u00e4 \u00bd", "\u00f0 \u0141"}) {
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    add_token(v, joined, token_type::normal);
    v.merges.push_back(m);
  }
  add_specials(v);
  v.add_bos = true;
  return v;
}

vocab_spec spm_spec() {
  vocab_spec v;
  v.kind = tokenizer_kind::spm;
  add_token(v, "<unk>", token_type::unknown);
  v.unk = 0;
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    add_token(v, text, token_type::byte);
  }
  const std::pair<const char*, float> pieces[] = {
      {"\u2581", -1}, {"\u2581t", -2},      {"he", -3},     {"\u2581the", -1.5f}, {"a", -5}, {"an", -4},
      {"and", -2},    {"\u2581\u2581", -6}, {"\u4f60", -5}, {"\u4f60\u597d", -3}, {"e", -7}, {"t", -7},
      {"h", -7}};
  for (const auto& [text, score] : pieces) add_token(v, text, token_type::normal, score);
  add_specials(v);
  v.add_bos = true;
  return v;
}

tokenizer must_create(vocab_spec v) {
  auto t = tokenizer::create(std::move(v));
  if (!t.ok()) std::fprintf(stderr, "%s\n", t.error().message.c_str());
  check(t.ok(), "vocabulary rejected");
  return std::move(t).value();
}

struct tokenizers {
  std::vector<tokenizer> bpe;
  tokenizer spm = must_create(spm_spec());
  tokenizers() {
    for (const char* pre : {"gpt2", "llama-bpe", "qwen2", "smollm", "gpt-4o"}) {
      vocab_spec v = bpe_spec();
      v.pre = pre;
      bpe.push_back(must_create(std::move(v)));
    }
  }
};

bool valid_utf8(const std::string& s) {
  for (size_t pos = 0; pos < s.size();) {
    const utf8_char c = decode_utf8(s, pos);
    if (c.status != utf8_status::ok) return false;
    pos += c.len;
  }
  return true;
}

// The pieces joined, none stripped: what a stream of these tokens shows.
std::string joined_pieces(const tokenizer& tok, std::span<const token_id> ids) {
  std::string out;
  for (token_id id : ids) out += tok.token_bytes(id, true);
  return out;
}

void check_stream(const tokenizer& tok, const std::vector<token_id>& ids) {
  stream_decoder dec(tok, true);
  std::string streamed;
  for (token_id id : ids) streamed += dec.push(id);
  streamed += dec.flush();
  check(valid_utf8(streamed), "stream decoder emitted invalid UTF-8");
  const std::string joined = joined_pieces(tok, ids);
  if (valid_utf8(joined)) check(streamed == joined, "stream decoder disagrees with the pieces");
}

void check_ids(const tokenizer& tok, const std::vector<token_id>& ids) {
  for (token_id id : ids) check(id >= 0 && size_t(id) < tok.n_vocab(), "id out of range");
}

void check_bpe(const tokenizer& tok, const std::string& text) {
  const std::string expected = llama_cpp_utf8(text);
  check(tok.decode(tok.encode(text, {false, false})) == expected, "plain round trip");
  const std::vector<token_id> ids = tok.encode(text, {true, true});
  check(!ids.empty() && ids[0] == tok.bos(), "bos first");
  check_ids(tok, ids);
  check(tok.decode(std::span(ids).subspan(1), true) == expected, "special round trip");
  check_stream(tok, ids);
}

// spm spells spaces as "▁", and bytes of a "▁" that fell back (invalid UTF-8 before it took the
// rest) come back as "▁": compare with every "▁" a space.
std::string spaces_for_blocks(std::string text) {
  for (size_t at; (at = text.find("\u2581")) != std::string::npos;) text.replace(at, 3, " ");
  return text;
}

// The text again from the tokens, each stretch of ordinary tokens without the one space the encoder
// put before it (this vocabulary has a lone "▁", so that space is always the stretch's first byte).
std::string spm_text_from(const tokenizer& tok, std::span<const token_id> ids) {
  std::string out;
  bool stretch_start = true;
  for (token_id id : ids) {
    const token_type t = tok.spec().types[size_t(id)];
    const std::string piece = tok.token_bytes(id, true);
    if (t == token_type::control || t == token_type::user_defined || t == token_type::unknown) {
      out += piece;
      stretch_start = true;
      continue;
    }
    check(!stretch_start || (!piece.empty() && piece[0] == ' '),
          "a stretch of text without its prefix space");
    out.append(piece, stretch_start ? 1 : 0);
    stretch_start = false;
  }
  return out;
}

void check_spm(const tokenizer& tok, const std::string& text) {
  const std::string expected = spaces_for_blocks(text);
  const std::vector<token_id> plain = tok.encode(text, {false, false});
  check_ids(tok, plain);
  check(spaces_for_blocks(spm_text_from(tok, plain)) == expected, "plain round trip");
  const std::vector<token_id> ids = tok.encode(text, {true, true});
  check(!ids.empty() && ids[0] == tok.bos(), "bos first");
  check_ids(tok, ids);
  check(spaces_for_blocks(spm_text_from(tok, std::span(ids).subspan(1))) == expected, "special round trip");
  const std::string joined = joined_pieces(tok, std::span(ids).subspan(1));
  check(tok.decode(std::span(ids).subspan(1), true) ==
            joined.substr(joined.empty() || joined[0] != ' ' ? 0 : 1),
        "decode drops more than the first token's space");
  check_stream(tok, ids);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds({
      "the cat and the hat\n\nin 12345 I'M",
      "<|begin|>hi<|endoftext|><think>x</think><|end",
      "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB \xE4\xBD\xA0\xE5\xA5\xBD e\xCC\x81 \t\r\n  ",
      "bad \xFF\xFE \xC3 \xE2\x82 \xE2\x96\x81",
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tokenizers toks;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const tokenizer& tok : toks.bpe) check_bpe(tok, text);
  check_spm(toks.spm, text);
  return 0;
}
