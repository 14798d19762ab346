#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "model/bpe_trainer.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

using corpus = std::vector<std::pair<std::string, uint64_t>>;

// The reference twin: recounts every pair before each merge, words as vectors of token strings.
std::vector<bpe_merge> reference_train(const corpus& pieces, size_t max_merges) {
  std::vector<std::pair<std::vector<std::string>, uint64_t>> words;
  std::set<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.insert(std::string(1, static_cast<char>(b)));
  for (const auto& [bytes, count] : pieces) {
    std::vector<std::string> w;
    for (const char c : bytes) w.emplace_back(1, c);
    words.emplace_back(std::move(w), count);
  }
  std::set<std::pair<std::string, std::string>> banned;
  std::vector<bpe_merge> merges;
  while (merges.size() < max_merges) {
    // std::map orders pairs by (left, right) bytes, so the first maximum wins ties.
    std::map<std::pair<std::string, std::string>, uint64_t> counts;
    for (const auto& [w, n] : words) {
      for (size_t i = 0; i + 1 < w.size(); ++i) counts[{w[i], w[i + 1]}] += n;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    uint64_t best_count = 1;
    for (const auto& [p, n] : counts) {
      if (n > best_count && !banned.contains(p)) {
        best = &p;
        best_count = n;
      }
    }
    if (best == nullptr) break;
    const auto [left, right] = *best;
    if (!tokens.insert(left + right).second) {
      banned.insert({left, right});
      continue;
    }
    merges.push_back({left, right});
    for (auto& [w, n] : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == left && w[i + 1] == right) {
          out.push_back(left + right);
          ++i;
        } else {
          out.push_back(w[i]);
        }
      }
      w = std::move(out);
    }
  }
  return merges;
}

std::vector<std::string> joined(const std::vector<bpe_merge>& merges) {
  std::vector<std::string> out;
  for (const auto& m : merges) out.push_back(m.left + " " + m.right);
  return out;
}

}  // namespace

TEST_CASE("the classic low/lower/newest/widest corpus gives the hand-computed merges", "[bpe_trainer]") {
  const corpus pieces = {{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}};
  // By hand: e s / s t tie at 9 -> "e s" (e < s); "es t" 9; l o / o w tie at 7 -> "l o"; "lo w" 7;
  // e w / n e / w est tie at 6 -> "e w", then "ew est" (ew < n), "n ewest"; then the widest
  // chain at 3 (d < i < w); then "e r" / "low e" tie at 2 -> "e r", "low er". Then no pair is left.
  const std::vector<std::string> expected = {
      "e s", "es t", "l o", "lo w", "e w", "ew est", "n ewest", "d est", "i dest", "w idest", "e r", "low er",
  };
  CHECK(joined(train_bpe(pieces, 100)) == expected);
  CHECK(joined(train_bpe(pieces, 3)) == std::vector<std::string>(expected.begin(), expected.begin() + 3));
  CHECK(train_bpe(pieces, 0).empty());
}

TEST_CASE("ties go to the pair whose bytes sort first, bytes compared unsigned", "[bpe_trainer]") {
  CHECK(joined(train_bpe(corpus{{"ba", 3}, {"ab", 3}}, 10)) == std::vector<std::string>{"a b", "b a"});
  // 0xc3 sorts after 'a' as an unsigned byte (it would sort first as a signed char).
  CHECK(joined(train_bpe(corpus{{"\xc3\xa9", 2}, {"ab", 2}}, 1)) == std::vector<std::string>{"a b"});
  // Left bytes decide before right bytes: "a z" before "b a".
  CHECK(joined(train_bpe(corpus{{"ba", 2}, {"az", 2}}, 1)) == std::vector<std::string>{"a z"});
}

TEST_CASE("training stops when no pair occurs twice", "[bpe_trainer]") {
  CHECK(train_bpe(corpus{{"abcd", 1}, {"xy", 1}}, 10).empty());
  CHECK(train_bpe(corpus{}, 10).empty());
  CHECK(train_bpe(corpus{{"a", 100}, {"", 5}, {"zz", 0}}, 10).empty());
  CHECK(joined(train_bpe(corpus{{"ab", 2}, {"cd", 1}}, 10)) == std::vector<std::string>{"a b"});
  // Duplicate pieces add up: each "cd" is seen once, together twice.
  CHECK(joined(train_bpe(corpus{{"cd", 1}, {"cd", 1}}, 10)) == std::vector<std::string>{"c d"});
}

TEST_CASE("repeated symbols merge left to right without double counting", "[bpe_trainer]") {
  // "aaa": (a a) occurs twice per word but one merge leaves [aa, a]; then (aa a).
  CHECK(joined(train_bpe(corpus{{"aaa", 2}}, 10)) == std::vector<std::string>{"a a", "aa a"});
  // "aaaa" -> [aa, aa] -> [aaaa].
  CHECK(joined(train_bpe(corpus{{"aaaa", 2}}, 10)) == std::vector<std::string>{"a a", "aa aa"});
  // "abab": the pair (b a) between two merges disappears, (ab ab) appears once per word.
  CHECK(joined(train_bpe(corpus{{"abab", 2}}, 10)) == std::vector<std::string>{"a b", "ab ab"});
}

TEST_CASE("training is deterministic whatever the order of the input", "[bpe_trainer]") {
  const corpus pieces = {{" the", 50}, {" then", 20}, {" they", 20}, {" there", 9}, {"the", 7}, {"\n", 30}};
  corpus reversed(pieces.rbegin(), pieces.rend());
  CHECK(train_bpe(pieces, 50) == train_bpe(reversed, 50));
  CHECK(train_bpe(pieces, 50) == train_bpe(pieces, 50));
}

TEST_CASE("the fast trainer matches the recounting reference on random corpora", "[bpe_trainer]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 gen(seed);
  // A tiny alphabet with a multi-byte character makes long repeats, ties and overlapping
  // merges common, and occasionally a pair whose concatenation already is a token.
  const std::vector<std::string> alphabet = {"a", "b", "c", " ", "\xc3\xa9"};
  for (int round = 0; round < 20; ++round) {
    corpus pieces;
    const size_t n_words = 1 + gen() % 40;
    for (size_t w = 0; w < n_words; ++w) {
      std::string bytes;
      const size_t len = 1 + gen() % 9;
      for (size_t i = 0; i < len; ++i) bytes += alphabet[gen() % alphabet.size()];
      pieces.emplace_back(bytes, 1 + gen() % 6);
    }
    CAPTURE(round);
    const auto expected = reference_train(pieces, 200);
    REQUIRE(joined(train_bpe(pieces, 200)) == joined(expected));
    // Every merge makes a new token.
    std::set<std::string> made;
    for (const auto& m : expected) CHECK(made.insert(m.left + m.right).second);
  }
}
