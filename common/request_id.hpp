#pragma once
// The engine's name for one request: what the engine API, the policies' snapshots and the
// gateways' tables share, without any of them depending on the others.
#include <cstdint>

namespace hearth {

using request_id = uint64_t;

}  // namespace hearth
