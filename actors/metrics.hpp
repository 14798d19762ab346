#pragma once
// The metrics actor: every finished request's timings per tenant (TTFT, each inter-token gap,
// end to end, queueing), counts by outcome and rejection reason, the distributions of what each
// iteration ran (sequences, prefill and decode tokens, step time), and the engine's gauges.
// Answers (stats_atom) with a metrics_snapshot for `hearth serve`'s stats, the bench and tests.

#include <caf/fwd.hpp>

namespace hearth {

caf::actor spawn_metrics(caf::actor_system& sys);

}  // namespace hearth
