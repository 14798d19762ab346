#pragma once
// The replies that report on the server rather than on one request: pong, stats, models.
// Their JSON shapes are docs/protocol.md's.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/metrics_types.hpp"
#include "core/config.hpp"
#include "server/gateway.hpp"

namespace hearth::server {

//! `tenant`: the authenticated tenant (null in development mode).
nlohmann::json pong_reply(const std::string& id, const std::optional<std::string>& tenant);
//! The engine's gauges, iterations and configured limits (`cfg`; `policy` is the one in force),
//! and `tenant`'s own counters; with `all` (an admin's `stats`), every tenant's in `m` too, with
//! its requests waiting and running.
nlohmann::json stats_reply(const std::string& id, const metrics_snapshot& m, const std::string& tenant,
                           const engine_config& cfg, const std::string& policy, bool all = false);
nlohmann::json models_reply(const std::string& id, const model_card& card);

}  // namespace hearth::server
