#pragma once
// The admission actor: the engine's front door. It checks each request before any expensive
// work (prompt and completion fit the context and the KV pool, tokens in the vocabulary,
// sampling parameters in range), then its tenant's quotas and the queue limits, answering a
// refusal at once with a typed reason (core/admission_core.hpp decides; every refusal is
// counted by tenant and reason in metrics). Accepted requests go on to the scheduler,
// cancellations after them, in order.

#include <vector>

#include "actors/messages.hpp"
#include "core/admission_core.hpp"

namespace hearth {

//! Spawns admission; it forwards to the scheduler once told with (ready_atom, scheduler).
admission_actor spawn_admission(caf::actor_system& sys, admission_limits limits,
                                std::vector<tenant_config> tenants, metrics_actor metrics);

}  // namespace hearth
