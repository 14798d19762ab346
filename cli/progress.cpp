#include "cli/progress.hpp"

#include <unistd.h>

namespace hearth::cli {

namespace {

constexpr double quiet_s = 1.0;  // work done sooner shows no progress at all

}  // namespace

std::string human_duration(double s) {
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%.1f s", s);
  } else {
    const auto total = static_cast<long long>(s);
    std::snprintf(text, sizeof text, total < 3600 ? "%lldm%02llds" : "%lldh%02lldm",
                  total < 3600 ? total / 60 : total / 3600, total < 3600 ? total % 60 : total % 3600 / 60);
  }
  return text;
}

progress_line::progress_line(std::string what, std::FILE* out)
    : what_(std::move(what)), out_(out), terminal_(::isatty(::fileno(out)) == 1) {}

void progress_line::update(uint64_t done, uint64_t total) {
  if (total == 0) return;
  std::lock_guard lock(m_);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed < quiet_s) return;
  const double frac = static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  const int percent = static_cast<int>(frac * 100), tenth = static_cast<int>(frac * 10);
  if (terminal_ ? percent == percent_ : tenth == tenth_) return;
  percent_ = percent;
  tenth_ = tenth;
  // The time left if the rest goes as fast as what is done; unknown until something is.
  const std::string left = frac > 0 ? human_duration(elapsed * (1 - frac) / frac) + " left" : "";
  std::fprintf(out_, terminal_ ? "\r%s: %3d %%  %-14s" : "%s: %d %%  %s\n", what_.c_str(), percent,
               left.c_str());
  std::fflush(out_);
}

void progress_line::finish() {
  std::lock_guard lock(m_);
  if (percent_ < 0) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, terminal_ ? "\r%s: done in %s%*s\n" : "%s: done in %s%*s\n", what_.c_str(),
               human_duration(elapsed).c_str(), terminal_ ? 12 : 0, "");
  std::fflush(out_);
  percent_ = -1;
}

}  // namespace hearth::cli
