// A libFuzzer harness without libFuzzer: the test suite links each harness to this driver, built
// by the ordinary compiler, so that every build (the sanitizer build included) compiles the
// harnesses and runs their checks. It has the harness write its seeds, then feeds it each seed,
// prefixes of it, and a fixed set of mutations of it (byte flips, deletions, insertions and
// splices). Deterministic: the same inputs on every run. Real coverage-guided fuzzing is
// scripts/fuzz.sh (clang's libFuzzer), which links the same harness files.
//
// Usage: fuzz_replay_NAME [MUTATIONS_PER_SEED]

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using bytes = std::vector<uint8_t>;

void run(const bytes& in) {
  LLVMFuzzerTestOneInput(in.data(), in.size());
}

bytes read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

//! One mutation of `in`, drawn from `rng`: the kinds of damage a parser must survive.
bytes mutate(const bytes& in, const std::vector<bytes>& seeds, std::mt19937_64& rng) {
  bytes out = in;
  auto at = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  switch (rng() % 5) {
    case 0:  // flip bits of one byte
      if (!out.empty()) out[at(out.size())] ^= static_cast<uint8_t>(1 + rng() % 255);
      break;
    case 1:  // an interesting value over one byte
      if (!out.empty()) out[at(out.size())] = std::vector<uint8_t>{0, 1, 0x7f, 0x80, 0xff}[rng() % 5];
      break;
    case 2: {  // delete a run
      const size_t from = at(out.size()), n = std::min(out.size() - from, 1 + at(16));
      out.erase(out.begin() + static_cast<ptrdiff_t>(from), out.begin() + static_cast<ptrdiff_t>(from + n));
      break;
    }
    case 3:  // insert random bytes
      for (size_t i = 0, n = 1 + at(8), pos = at(out.size() + 1); i < n; ++i)
        out.insert(out.begin() + static_cast<ptrdiff_t>(pos), static_cast<uint8_t>(rng()));
      break;
    default: {  // splice: this seed's head, another seed's tail
      const bytes& other = seeds[at(seeds.size())];
      out.resize(at(out.size() + 1));
      out.insert(out.end(), other.begin() + static_cast<ptrdiff_t>(at(other.size() + 1)), other.end());
      break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const long per_seed = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 2000;
  const fs::path dir = fs::temp_directory_path() / ("hearth-fuzz-replay-" + std::to_string(getpid()));
  fs::create_directories(dir);
  setenv("HEARTH_FUZZ_WRITE_SEEDS", dir.c_str(), 1);
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<bytes> seeds;
  for (const auto& e : fs::directory_iterator(dir)) seeds.push_back(read_all(e.path()));
  fs::remove_all(dir);
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz replay: the harness wrote no seeds\n");
    return 1;
  }
  std::mt19937_64 rng(20261130);
  size_t inputs = 0;
  for (const bytes& s : seeds) {
    run(s);
    for (size_t cut = 0; cut < s.size(); cut += std::max<size_t>(1, s.size() / 64), ++inputs)
      run(bytes(s.begin(), s.begin() + static_cast<ptrdiff_t>(cut)));
    bytes m = s;
    for (long i = 0; i < per_seed; ++i, ++inputs) {
      m = i % 8 == 0 ? mutate(s, seeds, rng) : mutate(m, seeds, rng);  // short chains of mutations
      run(m);
    }
  }
  std::printf("fuzz replay: %zu seeds, %zu inputs, no finding\n", seeds.size(), inputs + seeds.size());
  return 0;
}
