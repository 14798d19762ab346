#include "model/vocab.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "model/gguf.hpp"
#include "model/tokenizer.hpp"

namespace hearth {
namespace {

error bad(std::string msg) {
  return error{errc::malformed, "tokenizer: " + std::move(msg)};
}

// An array key whose elements all have `type`; nullptr (with `err` set) otherwise.
const gguf::array_value* typed_array(const gguf::file& f, const std::string& key, gguf::value_type type,
                                     std::optional<error>& err) {
  const auto* arr = f.get_array(key);
  if (!arr) {
    if (f.find(key)) err = bad(key + " is not an array");
    return nullptr;
  }
  if (arr->type != type) err = bad(key + " has elements of the wrong type");
  return err ? nullptr : arr;
}

// Optional token id key; absent -> no_token.
result<token_id> read_id(const gguf::file& f, const std::string& key, size_t n_tokens) {
  if (!f.find(key)) return no_token;
  const auto v = f.get_uint(key);
  if (!v || *v >= n_tokens) return bad(key + " is not a token id below " + std::to_string(n_tokens));
  return static_cast<token_id>(*v);
}

status<> read_ids(const gguf::file& f, vocab_spec& v) {
  struct id_key {
    token_id& out;
    const char* key;
  };
  for (const id_key& k :
       {id_key{v.bos, "tokenizer.ggml.bos_token_id"}, id_key{v.eos, "tokenizer.ggml.eos_token_id"},
        id_key{v.eot, "tokenizer.ggml.eot_token_id"}, id_key{v.unk, "tokenizer.ggml.unknown_token_id"},
        id_key{v.pad, "tokenizer.ggml.padding_token_id"}}) {
    auto id = read_id(f, k.key, v.tokens.size());
    if (!id) return id.error();
    k.out = *id;
  }
  // Files from older converters lack eot_token_id; the chat formats' end-of-turn tokens stand in.
  if (v.eot == no_token) {
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      if (v.tokens[i] == "<|eot_id|>" || v.tokens[i] == "<|im_end|>" || v.tokens[i] == "<|end|>" ||
          v.tokens[i] == "<end_of_turn>") {  // Gemma's converters write no eot_token_id
        v.eot = static_cast<token_id>(i);
        break;
      }
    }
  }
  return {};
}

status<> read_arrays(const gguf::file& f, vocab_spec& v) {
  std::optional<error> err;
  const auto* tokens = typed_array(f, "tokenizer.ggml.tokens", gguf::value_type::string, err);
  if (!tokens) return err ? *err : bad("missing tokenizer.ggml.tokens");
  v.tokens.reserve(tokens->items.size());
  for (const auto& t : tokens->items) v.tokens.push_back(std::get<std::string>(t));

  if (const auto* scores = typed_array(f, "tokenizer.ggml.scores", gguf::value_type::f32, err)) {
    if (scores->items.size() != v.tokens.size())
      return bad("tokenizer.ggml.scores and tokens differ in length");
    for (const auto& s : scores->items) v.scores.push_back(std::get<float>(s));
  }
  if (err) return *err;
  v.types.assign(v.tokens.size(), token_type::normal);
  if (const auto* types = typed_array(f, "tokenizer.ggml.token_type", gguf::value_type::i32, err)) {
    if (types->items.size() != v.tokens.size())
      return bad("tokenizer.ggml.token_type and tokens differ in length");
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      const int32_t t = std::get<int32_t>(types->items[i]);
      if (t < 0 || t > static_cast<int32_t>(token_type::byte))
        return bad("token_type[" + std::to_string(i) + "] unknown");
      v.types[i] = static_cast<token_type>(t);
    }
  }
  if (err) return *err;
  if (const auto* merges = typed_array(f, "tokenizer.ggml.merges", gguf::value_type::string, err)) {
    v.merges.reserve(merges->items.size());
    for (const auto& m : merges->items) v.merges.push_back(std::get<std::string>(m));
  }
  if (err) return *err;
  if (v.kind == tokenizer_kind::bpe && v.merges.empty())
    return bad("a gpt2 tokenizer needs tokenizer.ggml.merges");
  return {};
}

gguf::value string_array(const std::vector<std::string>& xs) {
  gguf::array_value arr{gguf::value_type::string, {}};
  arr.items.reserve(xs.size());
  for (const auto& x : xs) arr.items.emplace_back(x);
  return arr;
}

}  // namespace

result<vocab_spec> read_vocab(const gguf::file& f) {
  vocab_spec v;
  const std::string* model = f.get_string("tokenizer.ggml.model");
  if (!model) return bad("missing tokenizer.ggml.model");
  if (*model == "llama") {
    v.kind = tokenizer_kind::spm;
  } else if (*model == "gpt2") {
    v.kind = tokenizer_kind::bpe;
  } else {
    return error{errc::unsupported,
                 "tokenizer: unsupported tokenizer.ggml.model '" + *model + "' (llama, gpt2)"};
  }
  if (const std::string* pre = f.get_string("tokenizer.ggml.pre")) v.pre = *pre;
  if (auto s = read_arrays(f, v); !s) return s.error();
  if (auto s = read_ids(f, v); !s) return s.error();
  // llama.cpp's defaults when the file is silent: SentencePiece models start with BOS.
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(v.kind == tokenizer_kind::spm);
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
  if (const std::string* name = f.get_string("general.name")) {
    std::string lower = *name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    v.rstrip_specials = lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
  }
  if (const std::string* tmpl = f.get_string("tokenizer.chat_template")) v.chat_template = *tmpl;
  return v;
}

void write_vocab(const vocab_spec& v, gguf::writer& w) {
  w.set("tokenizer.ggml.model", std::string(v.kind == tokenizer_kind::spm ? "llama" : "gpt2"));
  if (v.kind == tokenizer_kind::bpe) w.set("tokenizer.ggml.pre", v.pre);
  w.set("tokenizer.ggml.tokens", string_array(v.tokens));
  if (!v.scores.empty()) {
    gguf::array_value scores{gguf::value_type::f32, {}};
    for (float s : v.scores) scores.items.emplace_back(s);
    w.set("tokenizer.ggml.scores", std::move(scores));
  }
  gguf::array_value types{gguf::value_type::i32, {}};
  for (token_type t : v.types) types.items.emplace_back(static_cast<int32_t>(t));
  w.set("tokenizer.ggml.token_type", std::move(types));
  if (!v.merges.empty()) w.set("tokenizer.ggml.merges", string_array(v.merges));
  const std::pair<const char*, token_id> ids[] = {{"tokenizer.ggml.bos_token_id", v.bos},
                                                  {"tokenizer.ggml.eos_token_id", v.eos},
                                                  {"tokenizer.ggml.eot_token_id", v.eot},
                                                  {"tokenizer.ggml.unknown_token_id", v.unk},
                                                  {"tokenizer.ggml.padding_token_id", v.pad}};
  for (const auto& [key, id] : ids) {
    if (id != no_token) w.set(key, static_cast<uint32_t>(id));
  }
  w.set("tokenizer.ggml.add_bos_token", v.add_bos);
  w.set("tokenizer.ggml.add_eos_token", v.add_eos);
  // Only when off, so that files written before the key was read stay byte-identical.
  if (v.kind == tokenizer_kind::spm && !v.add_space_prefix) w.set("tokenizer.ggml.add_space_prefix", false);
  if (!v.chat_template.empty()) w.set("tokenizer.chat_template", v.chat_template);
}

result<tokenizer> tokenizer::from_gguf(const gguf::file& f) {
  auto spec = read_vocab(f);
  if (!spec) return spec.error();
  return create(std::move(*spec));
}

}  // namespace hearth
