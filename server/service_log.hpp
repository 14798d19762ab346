#pragma once
// `hearth serve`'s log: one line per lifecycle event and per request end on stderr, never per
// token. Under systemd (stderr is the journal stream JOURNAL_STREAM names) each line starts with
// its sd-daemon(3) priority, `<3>` ... `<7>`, which journald files as the line's priority;
// elsewhere with `hearth: `. Lines below [server] log_level are dropped.

#include <optional>
#include <string>
#include <string_view>

#include "core/scheduler_core.hpp"

namespace hearth::server {

enum class log_level { error, warning, info, debug };

const char* to_string(log_level l);
std::optional<log_level> log_level_from_name(std::string_view name);

//! Lines below `l` are dropped from now on (at start, and on each reload).
void set_log_level(log_level l);
//! One line at level `l`, written whole (lines from several threads never interleave).
void log(log_level l, std::string_view line);

//! A request's end as one log line: id, tenant, outcome, tokens, queue, TTFT and mean ITL
//! (`request 17 (voice): done, stop; 42 + 18 tokens; queue 3 ms, TTFT 120 ms, ITL 45 ms`).
std::string describe_end(const request_record& r);

}  // namespace hearth::server
