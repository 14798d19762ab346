#pragma once
// The metrics actor: every finished request's timings per tenant (TTFT, each inter-token gap,
// end to end, queueing), counts by outcome and rejection reason, the distributions of what each
// iteration ran (sequences, prefill and decode tokens, step time), and the engine's gauges.
// Answers (stats_atom) with a metrics_snapshot for `hearth serve`'s stats, the bench and tests.
// Memory is bounded whatever names clients send: the tenant table's names, and up to 64 others,
// are counted each on its own; further names share the state named `unlisted_tenants`.

#include <functional>
#include <vector>

#include "actors/messages.hpp"
#include "core/scheduler_core.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth {

//! `tenants`: the table's names (tenants_atom replaces them).
//! `request_end`: told of each record and refusal as it arrives (core/engine_hooks.hpp); may be empty.
metrics_actor spawn_metrics(caf::actor_system& sys, const std::vector<tenant_config>& tenants,
                            std::function<void(const request_record&)> request_end = {});

}  // namespace hearth
