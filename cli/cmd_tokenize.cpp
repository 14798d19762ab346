// hearth model tokenize FILE TEXT: the tokens a model sees for a prompt, one per line (id, the
// text it stands for, its vocabulary entry), or as JSON. The prompt is encoded as `hearth generate`
// encodes it: BOS when the vocabulary asks, special-token text left as text unless --special.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "model/gguf.hpp"
#include "model/tokenizer.hpp"
#include "model/unicode.hpp"

namespace hearth::cli {
namespace {

struct tokenize_args {
  std::string model;
  std::string text;
  bool no_bos = false;
  bool special = false;
  bool json = false;
};

// A piece quoted for a terminal: valid UTF-8 as is, control characters and bytes that are not
// UTF-8 (a byte-fallback token is often one byte of a character) as escapes, so that every
// piece is visible and one line.
std::string quote_piece(const std::string& s) {
  std::string out = "'";
  for (size_t pos = 0; pos < s.size();) {
    const utf8_char c = decode_utf8(s, pos);
    const auto b = static_cast<unsigned char>(s[pos]);
    if (c.status != utf8_status::ok || b < 0x20 || b == 0x7f) {
      char esc[8];
      const char* named = b == '\n' ? "\\n" : b == '\t' ? "\\t" : b == '\r' ? "\\r" : nullptr;
      if (!named) std::snprintf(esc, sizeof esc, "\\x%02X", b);
      out += named ? named : esc;
      ++pos;
      continue;
    }
    if (b == '\'' || b == '\\') out += '\\';
    out.append(s, pos, c.len);
    pos += c.len;
  }
  return out + "'";
}

const char* type_name(token_type t) {
  switch (t) {
    case token_type::undefined:
      return "undefined";
    case token_type::normal:
      return "normal";
    case token_type::unknown:
      return "unknown";
    case token_type::control:
      return "control";
    case token_type::user_defined:
      return "user-defined";
    case token_type::unused:
      return "unused";
    case token_type::byte:
      return "byte";
  }
  return "?";
}

int run_tokenize(const tokenize_args& a) {
  auto f = gguf::file::open(a.model);
  if (!f) return fail(f.error().message());
  auto tok = tokenizer::from_gguf(*f);
  if (!tok) return fail(tok.error().message);
  const auto ids = tok->encode(a.text, {.add_bos = !a.no_bos, .parse_special = a.special});
  const vocab_spec& v = tok->spec();
  if (a.json) {
    // Pieces that are not whole UTF-8 characters come out with U+FFFD; "token" keeps the entry.
    nlohmann::json tokens = nlohmann::json::array();
    for (token_id id : ids) {
      tokens.push_back({{"id", id},
                        {"piece", tok->token_bytes(id, true)},
                        {"token", v.tokens[size_t(id)]},
                        {"type", type_name(v.types[size_t(id)])}});
    }
    const nlohmann::json out = {{"n_tokens", ids.size()}, {"tokens", std::move(tokens)}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  // llama-tokenize's layout (id -> 'piece'), with the vocabulary entry where it says more.
  for (token_id id : ids) {
    const std::string piece = quote_piece(tok->token_bytes(id, true));
    const std::string& entry = v.tokens[size_t(id)];
    const token_type t = v.types[size_t(id)];
    std::printf("%6d -> %s", id, piece.c_str());
    if (t == token_type::byte || t == token_type::control || t == token_type::unknown ||
        t == token_type::unused) {
      std::printf("  %s %s", type_name(t), entry.c_str());
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& model, int& exit_code) {
  auto* cmd = model.add_subcommand("tokenize", "Show the tokens a model sees for a text: ids and pieces");
  auto a = std::make_shared<tokenize_args>();
  cmd->add_option("file", a->model, "GGUF model file")->required();
  cmd->add_option("text", a->text, "Text to tokenize")->required();
  cmd->add_flag("--no-bos", a->no_bos, "Do not add BOS even where the vocabulary asks for it");
  cmd->add_flag("--special", a->special,
                "Turn special-token text (\"<|eot_id|>\") into those tokens, as chat templates do");
  cmd->add_flag("--json", a->json, "One JSON object: n_tokens and each token's id, piece, entry and type");
  cmd->callback([a, &exit_code] { exit_code = run_tokenize(*a); });
}

}  // namespace hearth::cli
