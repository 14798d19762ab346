#include "server/service_log.hpp"

#include <sys/stat.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace hearth::server {

namespace {

std::atomic<log_level> threshold{log_level::info};

// systemd sets JOURNAL_STREAM to "device:inode" of the stream it connected to the journal; a
// stderr redirected elsewhere meanwhile no longer matches it.
bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  struct stat st {};
  if (!js || fstat(2, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  return std::sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == st.st_dev && ino == st.st_ino;
}

int priority(log_level l) {
  switch (l) {
    case log_level::error:
      return 3;
    case log_level::warning:
      return 4;
    case log_level::info:
      return 6;
    case log_level::debug:
      return 7;
  }
  return 6;
}

std::string ms(double v) {
  return std::to_string(static_cast<long long>(std::llround(v))) + " ms";
}

}  // namespace

const char* to_string(log_level l) {
  switch (l) {
    case log_level::error:
      return "error";
    case log_level::warning:
      return "warning";
    case log_level::info:
      return "info";
    case log_level::debug:
      return "debug";
  }
  return "info";
}

std::optional<log_level> log_level_from_name(std::string_view name) {
  for (auto l : {log_level::error, log_level::warning, log_level::info, log_level::debug})
    if (name == to_string(l)) return l;
  return std::nullopt;
}

void set_log_level(log_level l) {
  threshold = l;
}

void log(log_level l, std::string_view line) {
  if (l > threshold.load()) return;
  static const bool journal = stderr_is_journal();
  char prefix[16];
  if (journal) {
    std::snprintf(prefix, sizeof prefix, "<%d>", priority(l));
  } else {
    std::snprintf(prefix, sizeof prefix, "hearth: ");
  }
  // One call: stdio locks the stream for it, so lines from several threads never interleave.
  std::fprintf(stderr, "%s%.*s\n", prefix, static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

std::string describe_end(const request_record& r) {
  std::string s =
      "request " + std::to_string(r.id) + " (" + (r.tenant.empty() ? "no tenant" : r.tenant) + "): ";
  if (r.kind == event_kind::rejected) return s + "refused, " + to_string(r.reason);
  s += to_string(r.kind);
  if (r.kind == event_kind::done) s += std::string(", ") + to_string(r.finish);
  if (r.kind == event_kind::error) s += std::string(", ") + to_string(r.reason);
  s += "; " + std::to_string(r.use.prompt_tokens) + " + " + std::to_string(r.use.completion_tokens) +
       " tokens";
  s += "; queue " + ms(r.time.queue_ms);
  if (r.use.completion_tokens > 0) s += ", TTFT " + ms(r.time.ttft_ms);
  if (r.use.completion_tokens > 1) s += ", ITL " + ms(r.time.mean_itl_ms);
  if (r.preemptions > 0) s += ", " + std::to_string(r.preemptions) + " preemptions";
  return s;
}

}  // namespace hearth::server
