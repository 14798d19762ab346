#include "bench/household/prompt_synth.hpp"

#include <vector>

#include "model/synthetic_text.hpp"

namespace hearth::household {

namespace {

bool utf8_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// Where word pieces begin: before each space or newline (cutting there never splits a piece).
std::vector<size_t> piece_starts(const std::string& s) {
  std::vector<size_t> b;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((s[i] == ' ' || s[i] == '\n') && s[i - 1] != ' ' && s[i - 1] != '\n') b.push_back(i);
  }
  return b;
}

constexpr int attempts = 16;  // texts tried before giving up (one is nearly always enough)

}  // namespace

size_t prompt_synth::count(std::string_view text) const {
  return tok_->encode(text, {.add_bos = true, .parse_special = false}).size();
}

// head + a cut of generated text, of exactly n tokens. A text whose next piece jumps over n
// (from n - 1 to n + 1 tokens) is replaced by the next seed's.
result<std::string> prompt_synth::fit(const std::string& head, uint32_t n, uint64_t seed) const {
  if (count(head + "a") > n)
    return error{errc::invalid_argument,
                 "prompt of " + std::to_string(n) + " tokens: too short for any text"};
  for (int attempt = 0; attempt < attempts; ++attempt) {
    size_t bytes = 8 * size_t{n} + 64;
    std::string src = synthetic_text(seed * attempts + attempt, bytes);
    while (count(head + src) < n + 2) src = synthetic_text(seed * attempts + attempt, bytes *= 2);
    const auto cuts = piece_starts(src);
    auto tokens_at = [&](size_t c) { return count(head + src.substr(0, c)); };
    // Largest piece boundary with at most n tokens, by bisection over the boundaries.
    size_t lo = 0, hi = cuts.size();  // cuts[lo - 1] fits (lo = 0: none known), cuts[hi] does not
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (tokens_at(cuts[mid]) <= n)
        lo = mid + 1;
      else
        hi = mid;
    }
    size_t c = lo == 0 ? 0 : cuts[lo - 1];
    const size_t end = lo < cuts.size() ? cuts[lo] : src.size();
    // Then character by character into the next piece.
    size_t m = tokens_at(c);
    while (m < n && c < end) {
      do ++c;
      while (c < end && utf8_continuation(src[c]));
      m = tokens_at(c);
    }
    if (m == n && c > 0) return head + src.substr(0, c);
  }
  return error{errc::invalid_argument,
               "cannot synthesise a prompt of exactly " + std::to_string(n) + " tokens"};
}

result<std::string> prompt_synth::make(uint32_t n, uint64_t seed, uint32_t shared, uint64_t shared_seed) {
  std::string head;
  if (shared > 0) {
    auto it = shared_.find({shared, shared_seed});
    for (uint64_t attempt = 0; it == shared_.end() && attempt < attempts; ++attempt) {
      // Ends with a newline, its own piece: the body's first word never merges into the prefix.
      auto p = fit({}, shared - 1, (shared_seed ^ 0x5eed5eed) + attempt * 7919);
      if (!p) return p.error();
      if (count(*p + "\n") == shared) it = shared_.emplace(std::pair{shared, shared_seed}, *p + "\n").first;
    }
    if (it == shared_.end())
      return error{errc::invalid_argument,
                   "cannot synthesise a shared prefix of " + std::to_string(shared) + " tokens"};
    head = it->second;
  }
  auto text = fit(head, n, seed);
  if (text && count(*text) != n)
    return error{errc::invalid_argument, "prompt synthesis: re-encoding changed the count"};
  return text;
}

}  // namespace hearth::household
