#pragma once
// The handshake a server and a worker on another machine exchange before any step: both must
// speak the same wire version, be the same build and have loaded the same model file. No CAF
// here: the engine's face and `hearth worker` name these without it.

#include <cstdint>
#include <string>

#include "common/result.hpp"

namespace hearth {

//! The layout of every message between a scheduler and a remote worker (step, step_result,
//! worker_info, this handshake). Bumped by any change to one of them or to their inspect().
// 2: worker_info names its device; 3: a step carries shipped KV blocks (kv_blocks), a worker
// answers (kv_read, ids) with its blocks' bytes, worker_info gives its block_bytes; 4: a worker
// stopped under a server sends its scheduler (leave) and waits for the answer.
constexpr uint32_t worker_wire_version = 4;

//! What each side says of itself at join. Its own layout never changes (a new field goes into
//! a new wire version's message), so two builds can always compare it.
struct join_hello {
  uint32_t wire_version = worker_wire_version;
  std::string build;         //!< build_version() of the sender
  std::string model_file;    //!< the model file's path as the sender opened it
  std::string model_sha256;  //!< SHA-256 of that file's bytes, in hex (`sha256sum FILE`)
};

//! The project version, with `git describe` of the checkout it was configured from when it was
//! one: "0.1.0 (b5f4f9f-dirty)".
std::string build_version();

//! This process's hello for a model file and its hash.
join_hello local_hello(std::string model_file, std::string model_sha256);

//! A worker's check of a server's hello against its own: errc::invalid_argument naming each
//! field that differs ("build 0.1.0 (a) here, 0.1.0 (b) at the server; model file hash differs:
//! models/a.gguf (1a2b...) here, models/b.gguf (3c4d...) at the server").
status<> check_join(const join_hello& worker, const join_hello& server);

}  // namespace hearth
