#pragma once
// A progress line for long work (writing a 1b model, loading a large one): on a terminal one
// line on stderr rewritten in place with the share done and the time left; otherwise a plain
// line at each tenth, so a log (journald, CI) gets ten lines, not thousands. Work that ends
// within its first second prints nothing: a small model loads without a word.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace hearth::cli {

class progress_line {
 public:
  //! `what`: "writing models/1b.gguf"; `out` stderr unless a test says otherwise.
  explicit progress_line(std::string what, std::FILE* out = stderr);
  //! Reports `done` of `total`; from any thread.
  void update(uint64_t done, uint64_t total);
  //! Ends the line: "WHAT: done in 3.2 s" (nothing when nothing was shown).
  void finish();

 private:
  std::string what_;
  std::FILE* out_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex m_;
  int percent_ = -1, tenth_ = -1;
};

//! "1m12s", "3.2 s": a duration as a person reads it.
std::string human_duration(double seconds);

}  // namespace hearth::cli
