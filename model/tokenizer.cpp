// Validation, special-token matching and decoding; the encoders are in tokenizer_spm.cpp and
// tokenizer_bpe.cpp. Behaviour follows llama.cpp (src/llama-vocab.cpp, build b4748), checked
// token for token against it (tests/test_tokenizer_llama_cpp.cpp), except where noted:
// - Ordinary text only becomes normal/undefined tokens (bpe: also byte-typed ones), never control,
//   unknown, unused or spm byte tokens. llama.cpp looks every token up, so merging the characters
//   of "</s>" could spell the control token there; here only parse_special makes control tokens.
// - A byte that no token spells becomes unk (llama.cpp stops with an exception).
// - add_eos is not applied by encode. bpe decode does not remove spaces before punctuation
//   (llama.cpp's clean_spaces), so valid text comes back unchanged. add_space_prefix applies to
//   spm only (llama.cpp would strip a bpe text's first space in decoding if a file set it).
// - Pieces follow llama.cpp's token_to_piece: control and unknown tokens only when rendering
//   specials, unused and undefined ones never, user-defined ones as stored, spm byte tokens as
//   their byte (so a space that fell back to the bytes of "▁" decodes as "▁", as in llama.cpp).

#include "model/tokenizer.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "model/byte_unicode.hpp"
#include "model/tokenizer_impl.hpp"
#include "model/unicode.hpp"

namespace hearth {
namespace {

error malformed(std::string what) {
  return {errc::malformed, "tokenizer: " + std::move(what)};
}

std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  out += s;
  out += '"';
  return out;
}

// "<0xNN>" -> NN, for spm byte tokens (llama.cpp writes the hex digits in upper case).
std::optional<uint8_t> parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else
      return std::nullopt;
    value = value * 16 + digit;
  }
  return static_cast<uint8_t>(value);
}

std::string byte_token_text(uint8_t b) {
  static const char hex[] = "0123456789ABCDEF";
  std::string text = "<0x00>";
  text[3] = hex[b >> 4];
  text[4] = hex[b & 15];
  return text;
}

// Texts that end a turn in the chat formats of the Llama family and its neighbours.
bool is_end_marker_text(std::string_view text) {
  static constexpr std::string_view markers[] = {
      "<|eot_id|>", "<|eom_id|>",    "<|im_end|>", "<|end_of_text|>",
      "</s>",       "<|endoftext|>", "<|end|>",    "<end_of_turn>",
  };
  return std::find(std::begin(markers), std::end(markers), text) != std::end(markers);
}

status<> check_sizes(vocab_spec& spec) {
  const size_t n = spec.tokens.size();
  if (n == 0) return malformed("the vocabulary has no tokens");
  if (n > size_t(std::numeric_limits<token_id>::max())) return malformed("too many tokens");
  if (spec.types.empty()) spec.types.assign(n, token_type::normal);
  if (spec.types.size() != n) {
    return malformed(std::to_string(spec.types.size()) + " token types for " + std::to_string(n) + " tokens");
  }
  const bool need_scores = spec.kind == tokenizer_kind::spm;
  if ((need_scores || !spec.scores.empty()) && spec.scores.size() != n) {
    return malformed(std::to_string(spec.scores.size()) + " scores for " + std::to_string(n) + " tokens");
  }
  for (size_t i = 0; i < n; ++i) {
    const auto t = static_cast<int32_t>(spec.types[i]);
    if (t < 0 || t > static_cast<int32_t>(token_type::byte)) {
      return malformed("token " + std::to_string(i) + " has unknown type " + std::to_string(t));
    }
  }
  const std::pair<const char*, token_id> ids[] = {
      {"bos", spec.bos}, {"eos", spec.eos}, {"eot", spec.eot}, {"unk", spec.unk}, {"pad", spec.pad}};
  for (const auto& [name, id] : ids) {
    if (id != no_token && (id < 0 || size_t(id) >= n)) {
      return malformed(std::string(name) + " token id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  if (spec.add_bos && spec.bos == no_token) return malformed("add_bos is set but there is no bos token");
  return {};
}

bool is_plain_type(tokenizer_kind kind, token_type t) {
  return t == token_type::normal || t == token_type::undefined ||
         (kind == tokenizer_kind::bpe && t == token_type::byte);
}

void index_tokens(tokenizer_state& m) {
  const vocab_spec& spec = m.spec;
  const tokenizer_kind kind = spec.kind;
  m.byte_token.fill(no_token);
  m.end_of_generation.assign(spec.tokens.size(), false);
  m.plain.reserve(spec.tokens.size());
  // spm byte fallback as llama.cpp's byte_to_token: the token spelled "<0xNN>" (upper-case hex,
  // whatever its type), else the token that is the byte itself.
  std::array<token_id, 256> single_byte;
  single_byte.fill(no_token);
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    const auto id = static_cast<token_id>(i);
    const std::string& text = spec.tokens[i];
    const token_type t = spec.types[i];
    m.end_of_generation[i] =
        id == spec.eos || id == spec.eot || (t == token_type::control && is_end_marker_text(text));
    if (text.empty()) continue;                             // can neither be matched nor spelled
    if (is_plain_type(kind, t)) m.plain.emplace(text, id);  // emplace keeps the first duplicate
    if (m.is_special(id)) m.specials.push_back(id);
    if (kind != tokenizer_kind::spm) continue;
    const auto b = parse_byte_token(text);
    if (b && text == byte_token_text(*b) && m.byte_token[*b] == no_token) m.byte_token[*b] = id;
    if (text.size() == 1 && single_byte[uint8_t(text[0])] == no_token) single_byte[uint8_t(text[0])] = id;
  }
  for (size_t b = 0; b < 256; ++b) {
    if (m.byte_token[b] == no_token) m.byte_token[b] = single_byte[b];
  }
  std::stable_sort(m.specials.begin(), m.specials.end(), [&](token_id a, token_id b) {
    return spec.tokens[size_t(a)].size() > spec.tokens[size_t(b)].size();
  });
  if (kind == tokenizer_kind::bpe) {
    for (int b = 0; b < 256; ++b) {
      auto it = m.plain.find(bytes_to_bpe_text(std::string(1, static_cast<char>(b))));
      if (it != m.plain.end()) m.byte_token[size_t(b)] = it->second;
    }
  }
}

status<> check_spm_bytes(const tokenizer_state& m) {
  for (int b = 0; b < 256; ++b) {
    if (m.byte_token[size_t(b)] == no_token && m.spec.unk == no_token) {
      return malformed("spm vocabulary lacks byte token " + byte_token_text(uint8_t(b)) +
                       " (type byte) and has no unk token to fall back to");
    }
  }
  return {};
}

token_id plain_token(const tokenizer_state& m, std::string_view text) {
  auto it = m.plain.find(text);
  return it == m.plain.end() ? no_token : it->second;
}

// Merges are "left right", highest priority first; every part must be an ordinary token.
status<> index_merges(tokenizer_state& m) {
  m.merges.reserve(m.spec.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < m.spec.merges.size(); ++rank) {
    const std::string_view merge = m.spec.merges[rank];
    const auto fail = [&](std::string_view why) {
      return malformed("merge " + std::to_string(rank) + " " + quoted(merge) + std::string(why));
    };
    const size_t space = merge.find(' ', 1);  // from 1, as llama.cpp: a left part may start with ' '
    if (space == std::string_view::npos || space + 1 == merge.size()) return fail(" is not \"left right\"");
    const std::string_view left = merge.substr(0, space), right = merge.substr(space + 1);
    joined.assign(left).append(right);
    const token_id l = plain_token(m, left), r = plain_token(m, right), result = plain_token(m, joined);
    for (const auto& [id, part] :
         {std::pair{l, left}, std::pair{r, right}, std::pair{result, std::string_view(joined)}}) {
      if (id == no_token) return fail(": token " + quoted(part) + " is not in the vocabulary");
    }
    const uint64_t key = uint64_t(uint32_t(l)) << 32 | uint32_t(r);
    m.merges.emplace(key,
                     bpe_merge{static_cast<int32_t>(rank), result});  // a repeated pair keeps its first rank
  }
  return {};
}

// C's isspace in the "C" locale, which llama.cpp's rstrip uses.
bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

struct fragment {
  std::string_view text;   // ordinary text, when id is no_token
  token_id id = no_token;  // a special token found in the text
};

// Cuts special-token texts out of the text, longest token first, as llama.cpp does. User-defined
// tokens are cut out always (text a converter added, as Hugging Face matches it); control and
// unknown ones only when parse_special.
std::vector<fragment> split_specials(const tokenizer_state& m, std::string_view text, bool parse_special) {
  std::vector<fragment> frags{{text}};
  std::vector<fragment> next;
  for (token_id id : m.specials) {
    if (!parse_special && m.spec.types[size_t(id)] != token_type::user_defined) continue;
    const std::string& needle = m.spec.tokens[size_t(id)];
    // Phi-3's added tokens take the whitespace after them, but for these three (llama.cpp's list).
    const bool rstrip =
        m.spec.rstrip_specials && needle != "<unk>" && needle != "<s>" && needle != "<|endoftext|>";
    next.clear();
    for (const fragment& f : frags) {
      if (f.id != no_token) {
        next.push_back(f);
        continue;
      }
      size_t from = 0;
      for (size_t at; (at = f.text.find(needle, from)) != std::string_view::npos;) {
        if (at > from) next.push_back({f.text.substr(from, at - from)});
        next.push_back({{}, id});
        from = at + needle.size();
        while (rstrip && from < f.text.size() && is_c_space(f.text[from])) ++from;
      }
      if (from < f.text.size()) next.push_back({f.text.substr(from)});
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace

bool tokenizer_state::is_special(token_id id) const {
  const token_type t = spec.types[size_t(id)];
  return t == token_type::control || t == token_type::user_defined || t == token_type::unknown;
}

void tokenizer_state::push_byte(uint8_t b, std::vector<token_id>& out) const {
  if (byte_token[b] != no_token)
    out.push_back(byte_token[b]);
  else if (spec.unk != no_token)
    out.push_back(spec.unk);
}

result<tokenizer> tokenizer::create(vocab_spec spec) {
  if (auto s = check_sizes(spec); !s) return s.error();
  auto m = std::make_unique<impl>();
  const tokenizer_kind kind = spec.kind;
  m->spec = std::move(spec);
  if (kind == tokenizer_kind::bpe) {
    auto pre = pretokenizer_from_name(m->spec.pre);
    if (!pre) {
      return error{errc::unsupported, "tokenizer: unsupported bpe pre-tokenizer " + quoted(m->spec.pre) +
                                          " (supported: " + supported_pretokenizer_names() + ")"};
    }
    m->pre = *pre;
    m->ignore_merges = *pre == pretokenizer_kind::llama3;
  }
  index_tokens(*m);
  if (kind == tokenizer_kind::spm) {
    if (auto s = check_spm_bytes(*m); !s) return s.error();
  } else if (auto s = index_merges(*m); !s) {
    return s.error();
  }
  return tokenizer(std::move(m));
}

std::vector<token_id> tokenizer::encode(std::string_view text, const encode_options& opt) const {
  const impl& m = *impl_;
  std::vector<token_id> out;
  out.reserve(text.size() / 2 + 2);
  if (opt.add_bos && m.spec.add_bos && m.spec.bos != no_token) out.push_back(m.spec.bos);
  if (text.empty()) return out;
  const std::vector<fragment> frags = split_specials(m, text, opt.parse_special);
  // spm prefixes a space to each stretch of text at the start or after a special token (llama.cpp),
  // unless the vocabulary says not to (tokenizer.ggml.add_space_prefix).
  bool after_special = true;
  for (const fragment& f : frags) {
    if (f.id != no_token) {
      out.push_back(f.id);
    } else if (m.spec.kind == tokenizer_kind::spm) {
      m.encode_spm(f.text, after_special && m.spec.add_space_prefix, out);
    } else {
      m.encode_bpe(f.text, out);
    }
    after_special = f.id != no_token;
  }
  // add_eos is deliberately not applied: these are prompts, and a model must not see EOS before it answers.
  return out;
}

std::string tokenizer::token_bytes(token_id id, bool render_special) const {
  const impl& m = *impl_;
  if (id < 0 || size_t(id) >= m.spec.tokens.size()) return {};
  const std::string& text = m.spec.tokens[size_t(id)];
  switch (m.spec.types[size_t(id)]) {
    case token_type::control:
    case token_type::unknown:
      return render_special ? text : std::string();
    case token_type::unused:
    case token_type::undefined:
      return {};  // llama.cpp gives these no piece at all
    case token_type::user_defined:
      return text;  // matched from raw text, stored as raw text
    case token_type::byte:
      if (m.spec.kind == tokenizer_kind::spm) {
        auto b = parse_byte_token(text);
        return b ? std::string(1, static_cast<char>(*b)) : text;
      }
      break;
    case token_type::normal:
      break;
  }
  if (m.spec.kind == tokenizer_kind::bpe) {
    auto bytes = bpe_text_to_bytes(text);
    return bytes ? *std::move(bytes) : text;  // a text outside the alphabet stands for itself
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "\u2581") == 0) {
      out += ' ';
      i += 3;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string tokenizer::decode(std::span<const token_id> ids, bool render_special) const {
  // llama_detokenize (remove_special off): the first token alone loses one leading space, the one
  // the encoder prefixed, even when that token is BOS and renders nothing (then the space stays).
  std::string out;
  bool strip = impl_->spec.kind == tokenizer_kind::spm && impl_->spec.add_space_prefix;
  for (token_id id : ids) {
    const std::string piece = token_bytes(id, render_special);
    out.append(piece, strip && !piece.empty() && piece[0] == ' ' ? 1 : 0);
    strip = false;
  }
  return out;
}

tokenizer_kind tokenizer::kind() const {
  return impl_->spec.kind;
}
size_t tokenizer::n_vocab() const {
  return impl_->spec.tokens.size();
}
token_id tokenizer::bos() const {
  return impl_->spec.bos;
}
token_id tokenizer::eos() const {
  return impl_->spec.eos;
}
token_id tokenizer::eot() const {
  return impl_->spec.eot;
}
const vocab_spec& tokenizer::spec() const {
  return impl_->spec;
}

bool tokenizer::is_end_of_generation(token_id id) const {
  return id >= 0 && size_t(id) < n_vocab() && impl_->end_of_generation[size_t(id)];
}

std::vector<token_id> tokenizer::end_of_generation_tokens() const {
  std::vector<token_id> ids;
  for (size_t i = 0; i < impl_->end_of_generation.size(); ++i)
    if (impl_->end_of_generation[i]) ids.push_back(static_cast<token_id>(i));
  return ids;
}

tokenizer::tokenizer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
tokenizer::tokenizer(tokenizer&&) noexcept = default;
tokenizer& tokenizer::operator=(tokenizer&&) noexcept = default;
tokenizer::~tokenizer() = default;

stream_decoder::stream_decoder(const tokenizer& tok, bool render_special)
    : tok_(&tok), render_special_(render_special) {}

std::string stream_decoder::push(token_id id) {
  pending_ += tok_->token_bytes(id, render_special_);
  // Emit every complete character; keep a sequence the end cuts short. Invalid bytes become U+FFFD
  // so that what streams out is always valid UTF-8.
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const utf8_char c = decode_utf8(pending_, pos);
    if (c.status == utf8_status::truncated) break;
    if (c.status == utf8_status::ok)
      out.append(pending_, pos, c.len);
    else
      append_utf8(out, replacement_char);
    pos += c.len;
  }
  pending_.erase(0, pos);
  return out;
}

std::string stream_decoder::flush() {
  std::string out;
  if (!pending_.empty()) append_utf8(out, replacement_char);
  pending_.clear();
  return out;
}

}  // namespace hearth
