#include "model/synthetic_text.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/rng.hpp"

namespace hearth {
namespace {

// Common words, most frequent first: their position is their Zipf rank. Contractions are split
// at the apostrophe when emitted; non-ASCII words sit at the end (rare but frequent enough to merge).
// clang-format off
constexpr std::array common_words = std::to_array<std::string_view>({
    "the", "a", "and", "to", "of", "in", "is", "it", "you", "that", "for", "on", "with", "we",
    "this", "be", "are", "was", "have", "at", "not", "but", "can", "so", "my", "your", "our", "all",
    "will", "do", "if", "just", "there", "they", "he", "she", "from", "up", "out", "what", "when",
    "some", "more", "about", "get", "one", "as", "by", "or", "an", "me", "her", "his", "them",
    "then", "now", "here", "no", "yes", "how", "make", "go", "like", "time", "day", "need", "want",
    "please", "think", "know", "see", "look", "come", "take", "put", "keep", "let", "use", "turn",
    "open", "close", "start", "stop", "set", "find", "give", "tell", "ask", "work", "help", "try",
    "leave", "call", "check", "don't", "it's", "can't", "we're", "they're", "you're", "I'm", "I've",
    "we'll", "she'd", "isn't", "won't", "that's", "clean", "wash", "cook", "bake", "boil", "fry",
    "stir", "mix", "chop", "slice", "pour", "heat", "cool", "warm", "cold", "hot", "wet", "dry",
    "house", "home", "kitchen", "room", "bedroom", "bathroom", "garden", "garage", "door",
    "window", "floor", "wall", "roof", "table", "chair", "sofa", "bed", "lamp", "light", "switch",
    "heater", "oven", "stove", "fridge", "freezer", "sink", "tap", "shelf", "drawer", "cupboard",
    "towel", "blanket", "pillow", "curtain", "carpet", "basket", "bucket", "broom", "soap",
    "laundry", "dishes", "plate", "bowl", "cup", "mug", "glass", "spoon", "fork", "knife", "pan",
    "pot", "kettle", "toaster", "bin", "key", "keys", "phone", "clock", "bread", "butter", "milk",
    "cheese", "egg", "eggs", "flour", "sugar", "salt", "pepper", "oil", "water", "tea", "coffee",
    "rice", "pasta", "soup", "salad", "apple", "apples", "banana", "lemon", "onion", "garlic",
    "tomato", "potato", "potatoes", "carrot", "beans", "chicken", "fish", "meat", "sauce", "cake",
    "cookie", "pie", "honey", "jam", "breakfast", "lunch", "dinner", "snack", "recipe", "weather",
    "rain", "sun", "sunny", "cloudy", "wind", "windy", "snow", "storm", "fog", "frost", "degrees",
    "forecast", "outside", "inside", "umbrella", "coat", "boots", "mum", "dad", "mother", "father",
    "sister", "brother", "grandma", "grandpa", "baby", "kids", "children", "family", "friend",
    "friends", "neighbour", "dog", "cat", "today", "tomorrow", "yesterday", "morning",
    "afternoon", "evening", "night", "week", "weekend", "month", "year", "hour", "minute",
    "minutes", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    "January", "April", "July", "October", "December", "two", "three", "four", "five", "six",
    "seven", "eight", "nine", "ten", "twenty", "hundred", "half", "dozen", "first", "second",
    "third", "last", "next", "early", "late", "soon", "always", "never", "often", "again",
    "before", "after", "because", "while", "until", "Anna", "Tom", "Maria", "Sam", "Lucy", "Ben",
    "Oliver", "Mia", "Noah", "Emma", "café", "crème", "brûlée", "naïve", "jalapeño", "piñata",
    "façade", "déjà", "über", "smörgåsbord", "fiancée", "purée", "sauté", "flambé", "entrée",
    "château", "señor", "mañana", "Zürich", "São", "Paulo", "茶", "米饭", "厨房", "家", "早上好",
    "谢谢", "ご飯", "天気", "김치", "라면"
});

// Single code points of category So, so each is its own punctuation-like piece.
constexpr std::array emoji = std::to_array<std::string_view>({
    "🙂", "😀", "🍳", "🍞", "☕", "☀", "❄", "🏠", "🐶", "🐱", "🎂", "👍"
});

// Syllable parts; repeats weight the draw. Codas "" appear often so that words stay pronounceable.
constexpr std::array onsets = std::to_array<std::string_view>({
    "", "", "", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
    "z", "b", "d", "l", "m", "n", "p", "r", "s", "t", "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr",
    "gr", "pl", "pr", "sh", "sl", "sp", "st", "th", "tr", "wh"
});
constexpr std::array nuclei = std::to_array<std::string_view>({
    "a", "a", "e", "e", "i", "o", "o", "u", "ai", "ea", "ee", "ie", "oa", "oo", "ou", "y"
});
constexpr std::array codas = std::to_array<std::string_view>({
    "", "", "", "", "", "", "", "", "b", "d", "ck", "g", "l", "ld", "m", "n", "n", "nd", "ng", "nt",
    "p", "r", "r", "rd", "s", "s", "sh", "st", "t", "t", "th", "x"
});
constexpr std::array suffixes = std::to_array<std::string_view>({
    "ing", "ed", "er", "ly", "s", "tion", "ness", "ful", "able", "est"
});
// clang-format on

// Pseudo-words per seed: enough distinct types that ~32k merges still find pairs seen twice.
constexpr size_t n_pseudo_words = 30000;

bool chance(rng& r, uint32_t per_mille) {
  return r.below(1000) < per_mille;
}

template <class Array>
auto pick(rng& r, const Array& a) {
  return a[r.below(a.size())];
}

std::string pseudo_word(rng& r) {
  std::string w;
  const uint64_t roll = r.below(100);
  const uint64_t n_syllables = roll < 35 ? 1 : roll < 80 ? 2 : 3;
  for (uint64_t i = 0; i < n_syllables; ++i) {
    w += pick(r, onsets);
    w += pick(r, nuclei);
    w += pick(r, codas);
  }
  if (chance(r, 250)) w += pick(r, suffixes);
  return w;
}

// Words by rank: the common list, then distinct pseudo-words in the order the seed made them.
std::vector<std::string> make_lexicon(rng& r) {
  std::vector<std::string> words(common_words.begin(), common_words.end());
  std::unordered_set<std::string> seen(words.begin(), words.end());
  words.reserve(words.size() + n_pseudo_words);
  while (words.size() < common_words.size() + n_pseudo_words) {
    std::string w = pseudo_word(r);
    if (seen.insert(w).second) words.push_back(std::move(w));
  }
  return words;
}

using piece_sink = std::function<void(std::string_view)>;

// Emits pieces sentence by sentence; see the header for which pieces it may emit.
class piece_generator {
 public:
  explicit piece_generator(uint64_t seed) : rng_(seed), lexicon_(make_lexicon(rng_)) {
    // Zipf–Mandelbrot weights 2^32 / (rank + 3) in integers: exact on every platform.
    cumulative_.reserve(lexicon_.size());
    uint64_t total = 0;
    for (size_t rank = 0; rank < lexicon_.size(); ++rank) {
      total += (uint64_t{1} << 32) / (rank + 3);
      cumulative_.push_back(total);
    }
  }

  //! Emits pieces to `sink` until at least n_bytes were emitted.
  void run(size_t n_bytes, const piece_sink& sink) {
    sink_ = &sink;
    n_emitted_ = 0;
    while (n_emitted_ < n_bytes) {
      if (line_start_ && chance(rng_, 60)) {
        list();
      } else {
        sentence();
      }
    }
  }

 private:
  const std::string& zipf_word() {
    const uint64_t x = rng_.below(cumulative_.back());
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), x);
    return lexicon_[static_cast<size_t>(it - cumulative_.begin())];
  }

  // " word" or "word" at line start, capitalised on request; a contraction becomes two pieces
  // (" don", "'t"), and an ASCII word sometimes takes a possessive "'s".
  void word(bool capital) {
    const std::string& w = zipf_word();
    const size_t apostrophe = w.find('\'');
    compose(line_start_ ? "" : " ");
    const size_t first = scratch_.size();
    scratch_.append(w, 0, apostrophe);
    if (capital && scratch_[first] >= 'a' && scratch_[first] <= 'z') scratch_[first] -= 'a' - 'A';
    emit(scratch_);
    line_start_ = false;
    if (apostrophe != std::string::npos) {
      emit(std::string_view(w).substr(apostrophe));
    } else if (static_cast<unsigned char>(w[0]) < 0x80 && chance(rng_, 15)) {
      emit("'s");
    }
  }

  // " " then the digits in groups of three from the left; sometimes a time "7:30".
  void number() {
    emit(" ");
    if (chance(rng_, 150)) {
      emit(std::to_string(1 + rng_.below(12)));
      emit(":");
      const uint64_t minutes = rng_.below(60);
      compose(minutes < 10 ? "0" : "");
      scratch_ += std::to_string(minutes);
      emit(scratch_);
      return;
    }
    static constexpr std::array<uint64_t, 4> limits = {10, 100, 1000, 100000};
    const std::string digits = std::to_string(rng_.below(limits[rng_.below(limits.size())]));
    for (size_t i = 0; i < digits.size(); i += 3) emit(std::string_view(digits).substr(i, 3));
  }

  void sentence() {
    const uint64_t n_words = 4 + rng_.below(12);
    for (uint64_t i = 0; i < n_words; ++i) {
      if (i > 0 && chance(rng_, 40)) {
        number();
      } else {
        word(i == 0);
      }
      if (i + 1 < n_words && chance(rng_, 80)) emit(chance(rng_, 900) ? "," : chance(rng_, 500) ? ";" : ":");
    }
    const uint64_t end = rng_.below(100);
    compose(end < 85 ? "." : end < 93 ? "?" : "!");
    if (chance(rng_, 30)) {
      // The emoji is a piece of its own (" 🙂"), taking the line's newlines if it ends it.
      emit(scratch_);
      compose(" ");
      scratch_ += pick(rng_, emoji);
    }
    line_end();
    emit(scratch_);
  }

  void emit(std::string_view piece) {
    n_emitted_ += piece.size();
    (*sink_)(piece);
  }

  // Starts composing a piece. (Not `scratch_ = "..."`: g++ 12 warns falsely (-Wrestrict) on it.)
  void compose(std::string_view start) {
    scratch_.clear();
    scratch_ += start;
  }

  // Appends the line ending (none, "\n" or "\n\n") to the punctuation piece in scratch_.
  void line_end() {
    const uint64_t r = rng_.below(100);
    line_start_ = r >= 60;
    if (r >= 60) scratch_ += r < 90 ? "\n" : "\n\n";
  }

  // A shopping-list block: "-", " eggs", ..., "\n" per line.
  void list() {
    const uint64_t n_lines = 2 + rng_.below(4);
    for (uint64_t i = 0; i < n_lines; ++i) {
      emit("-");
      line_start_ = false;
      if (chance(rng_, 300)) number();
      word(false);
      emit("\n");
      line_start_ = true;
    }
  }

  rng rng_;
  std::vector<std::string> lexicon_;
  std::vector<uint64_t> cumulative_;  // cumulative Zipf weights by rank
  std::string scratch_;               // the piece being composed
  bool line_start_ = true;            // the next word has no leading space
  const piece_sink* sink_ = nullptr;  // where run() sends pieces
  size_t n_emitted_ = 0;              // bytes sent so far
};

struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

std::string synthetic_text(uint64_t seed, size_t n_bytes) {
  std::string text;
  text.reserve(n_bytes + 64);
  piece_generator(seed).run(n_bytes, [&](std::string_view p) { text += p; });
  return text;
}

std::vector<std::pair<std::string, uint64_t>> synthetic_word_counts(uint64_t seed, size_t n_bytes) {
  std::unordered_map<std::string, uint64_t, string_hash, std::equal_to<>> counts;
  piece_generator(seed).run(n_bytes, [&](std::string_view p) {
    const auto it = counts.find(p);
    if (it != counts.end()) {
      ++it->second;
    } else {
      counts.emplace(p, 1);
    }
  });
  std::vector<std::pair<std::string, uint64_t>> out(counts.begin(), counts.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hearth
