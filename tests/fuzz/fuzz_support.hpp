#pragma once
// What the fuzz harnesses share: the check that stops a run on a broken property, the split of
// an input into its parts, and the text seeds LLVMFuzzerInitialize writes for
// HEARTH_FUZZ_WRITE_SEEDS (scripts/fuzz.sh and replay_main.cpp start from them).
#include <errno.h>  // program_invocation_short_name (GNU)

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::fuzz {

//! Aborts, naming the harness and the property, unless `ok`: libFuzzer then keeps the input,
//! and the replay test fails.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what);
    std::abort();
  }
}

//! The parts of `in` between the occurrences of `at` (one part, `in`, when there is none).
inline std::vector<std::string_view> split(std::string_view in, std::string_view at) {
  std::vector<std::string_view> parts;
  for (size_t i; (i = in.find(at)) != std::string_view::npos; in.remove_prefix(i + at.size()))
    parts.push_back(in.substr(0, i));
  parts.push_back(in);
  return parts;
}

//! Writes `seeds` as the files seed0, seed1, ... of the folder HEARTH_FUZZ_WRITE_SEEDS names;
//! nothing when it is not set.
inline void write_seeds(std::initializer_list<std::string_view> seeds) {
  const char* dir = std::getenv("HEARTH_FUZZ_WRITE_SEEDS");
  if (dir == nullptr) return;
  int n = 0;
  for (std::string_view s : seeds)
    std::ofstream(std::string(dir) + "/seed" + std::to_string(n++), std::ios::binary) << s;
}

}  // namespace hearth::fuzz
