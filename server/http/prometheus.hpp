#pragma once
// The engine's metrics in Prometheus' text exposition format (version 0.0.4), for GET /metrics:
// names in vLLM's style (hearth:time_to_first_token_seconds, ...) with a `tenant` label on what
// is counted per tenant. Histograms come from the metrics actor's log buckets (1 % resolution),
// read at the bounds of metrics_types.hpp: a bucket `le` may count values up to 1 % above it.

#include <string>

#include "actors/metrics_types.hpp"

namespace hearth::http {

//! The exposition text of `m` (every tenant in it), ending with a newline.
std::string prometheus_text(const metrics_snapshot& m);

//! Its Content-Type.
inline constexpr const char* prometheus_type = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace hearth::http
