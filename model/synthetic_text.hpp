#pragma once
// Deterministic household-flavoured pseudo-English: the training text of the generated models'
// vocabularies. A committed list of common English words (house, kitchen, weather, family, time,
// numbers) plus seed-dependent pseudo-words built from syllables, drawn with Zipf-like frequencies,
// with capitals, numbers, punctuation, contractions, lists, newlines and a little non-ASCII
// (accented Latin, CJK, emoji). Own integer PRNG: the same bytes on every platform.
//
// The generator produces *pieces* — the units the Llama 3 pre-tokenizer splits text into — and
// the text is their concatenation. It only writes text whose pieces the Llama 3 regex would cut
// exactly where the generator cut them:
//   " word" (leading space, letters; first word of a line has no space), "'s" / "'t" / "'re" ...
//   (contraction suffixes), " " + digit groups of 1-3 ("1234" -> "123", "4"), punctuation runs
//   that swallow following newlines (".", ".\n\n", ","), " 🙂" / " 🙂\n" (emoji), "-" and "\n"
//   (list lines).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hearth {

//! Text from `seed`: at least `n_bytes` long, ending at a piece boundary.
std::string synthetic_text(uint64_t seed, size_t n_bytes);

//! The pieces of synthetic_text(seed, n_bytes) with their counts, sorted by bytes.
std::vector<std::pair<std::string, uint64_t>> synthetic_word_counts(uint64_t seed, size_t n_bytes);

}  // namespace hearth
