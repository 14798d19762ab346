#include "spm_fixture_vocab.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::test {
namespace {

// "▁" U+2581 stands for a space; "_" below is written for it, to keep the lists readable.
constexpr std::string_view spm_space = "\xe2\x96\x81";

// Words as they start after a space ("_the") or inside one ("ing"). Every prefix of two or more
// characters becomes a piece too, so that pairwise merging can reach the whole word, as it can in
// a vocabulary trained by BPE-style merging (Llama 2's).
// clang-format off
constexpr std::string_view words[] = {
    "_the", "_of", "_and", "_to", "_in", "_is", "_it", "_you", "_that", "_he", "_was", "_for", "_on",
    "_are", "_with", "_as", "_his", "_they", "_be", "_at", "_one", "_have", "_this", "_from", "_or",
    "_had", "_by", "_not", "_but", "_what", "_some", "_we", "_can", "_out", "_other", "_were", "_all",
    "_there", "_when", "_up", "_use", "_your", "_how", "_said", "_an", "_each", "_she", "_which",
    "_do", "_their", "_time", "_if", "_will", "_way", "_about", "_many", "_then", "_them", "_would",
    "_like", "_so", "_these", "_her", "_make", "_see", "_him", "_two", "_has", "_look", "_more",
    "_day", "_could", "_go", "_come", "_did", "_my", "_no", "_most", "_who", "_over", "_know",
    "_than", "_first", "_been", "_now", "_find", "_long", "_down", "_people", "_water", "_call",
    "_world", "_hello", "_model", "_token", "_text", "_tea", "_kettle", "_home", "_light",
    "_The", "_I", "_Hello", "_Hearth", "_It", "_This", "_We", "_You", "_A",
    "ing", "ed", "er", "ly", "tion", "es", "ment", "ness", "able", "ful", "less", "est", "orld",
    "ll", "llo", "he", "th", "in", "an", "re", "on", "at", "en", "nd", "or", "ou", "ea", "st",
    "_1", "_10", "_100", "_2025", "00", "19", "20",
    "'s", "'t", "n't", "...", "_(", "_\"", "_-", "--", "_\xe2\x80\x94",  // _—
    "__", "____",  // runs of spaces, as Llama 2 has them; never a lone "_"
    "_caf\xc3\xa9", "na\xc3\xafve", "_\xe4\xbd\xa0\xe5\xa5\xbd", "\xe4\xb8\x96\xe7\x95\x8c",  // _café naïve _你好 世界
    "_\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",                                     // _привет
    "_\xf0\x9f\x91\x8b",                                                                      // _👋
};
// clang-format on

// Pairs with one score: the leftmost of equal candidates merges first.
constexpr std::string_view tied[] = {"xy", "yz", "zw"};
constexpr float tied_score = -100.0f;

// Single characters come last with the lowest scores, as in Llama 2. None is a space or "▁".
// clang-format off
constexpr std::string_view unicode_chars[] = {
    "\xc3\xa9", "\xc3\xa8", "\xc3\xbc", "\xc3\xb6", "\xc3\x9f", "\xc3\xb1", "\xc3\xa7", "\xc3\xaf",  // éèüößñçï
    "\xe4\xbd\xa0", "\xe5\xa5\xbd", "\xe4\xb8\x96", "\xe7\x95\x8c", "\xe6\x97\xa5", "\xe6\x9c\xac",  // 你好世界日本
    "\xe2\x80\x94", "\xe2\x80\x99", "\xe2\x80\xa6", "\xe2\x82\xac",                                  // —’…€
    "\xd0\xbf", "\xd1\x80", "\xd0\xb8", "\xd0\xb2", "\xd0\xb5", "\xd1\x82",                          // привет
    "\xf0\x9f\x91\x8b",                                                                              // 👋
};
// clang-format on

std::string spm_text(std::string_view written) {
  std::string out;
  for (char c : written) {
    if (c == '_')
      out += spm_space;
    else
      out += c;
  }
  return out;
}

// Byte offsets where each UTF-8 character of s ends.
std::vector<size_t> char_ends(std::string_view s) {
  std::vector<size_t> ends;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i + 1 == s.size() || (static_cast<unsigned char>(s[i + 1]) & 0xC0) != 0x80) ends.push_back(i + 1);
  }
  return ends;
}

void add(vocab_spec& v, std::string text, token_type type, float score) {
  v.tokens.push_back(std::move(text));
  v.types.push_back(type);
  v.scores.push_back(score);
}

}  // namespace

vocab_spec spm_fixture_vocab() {
  vocab_spec v;
  v.kind = tokenizer_kind::spm;
  v.add_bos = true;
  add(v, "<unk>", token_type::unknown, 0);
  add(v, "<s>", token_type::control, 0);
  add(v, "</s>", token_type::control, 0);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    add(v, text, token_type::byte, 0);
  }

  // Pieces: every prefix of every word, shorter ones first (they are the earlier merges), then in
  // the order the list gives; score -rank.
  std::vector<std::string> pieces;
  std::set<std::string> seen;
  for (std::string_view w : words) {
    const std::string text = spm_text(w);
    const std::vector<size_t> ends = char_ends(text);
    for (size_t k = 1; k < ends.size(); ++k) {
      std::string prefix = text.substr(0, ends[k]);
      if (seen.insert(prefix).second) pieces.push_back(std::move(prefix));
    }
  }
  std::stable_sort(pieces.begin(), pieces.end(), [](const std::string& a, const std::string& b) {
    return char_ends(a).size() < char_ends(b).size();
  });
  float rank = 0;
  for (std::string& p : pieces) add(v, std::move(p), token_type::normal, -rank++);
  for (std::string_view t : tied) add(v, std::string(t), token_type::normal, tied_score);

  for (char c = '!'; c <= '~'; ++c) add(v, std::string(1, c), token_type::normal, -rank++);
  for (std::string_view c : unicode_chars) add(v, std::string(c), token_type::normal, -rank++);

  // Added tokens, as a chat model's converter writes them.
  add(v, "<think>", token_type::user_defined, 0);
  add(v, "</think>", token_type::user_defined, 0);
  add(v, "<|im_end|>", token_type::control, 0);
  add(v, "<|endoftext|>", token_type::control, 0);  // llama.cpp needs it in a model named Phi-3
  return v;
}

}  // namespace hearth::test
