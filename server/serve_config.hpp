#pragma once
// `hearth serve`'s configuration file: [server], [http], [model] and [engine] are read here, the
// [[tenant]] tables by tenants/tenant_config.hpp; any other top-level name is refused. Every
// field, its default and its limits: docs/configuration.md. Command-line flags override the
// file (cli/cmd_serve.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "core/config.hpp"

namespace hearth::server {

struct serve_config {
  // [server]
  std::string endpoint = "tcp://127.0.0.1:5555";
  std::string secret_key_file = {};  //!< from `hearth keygen`; empty: development mode
  uint64_t max_message_bytes = 1 << 20;
  uint32_t heartbeat_ms = 1000;
  uint32_t drain_timeout_s = 30;   //!< on SIGTERM, how long requests in flight may run to their end; 0: cut
  std::string log_level = "info";  //!< error, warning, info (lifecycle and request ends), debug
  // [http]: the HTTP gateway (docs/http.md), served only when the section or --http is given
  bool http = false;
  std::string http_endpoint = "127.0.0.1:11434";
  bool http_public = false;  //!< a non-loopback address without keys
  std::optional<std::string> http_anonymous_tenant = std::nullopt;
  uint32_t http_threads = 64;  //!< connections served at once
  uint64_t http_max_body_bytes = 1 << 20;
  std::string http_tls_cert, http_tls_key;  //!< PEM files: HTTPS (both or neither)
  // [model]
  std::string model_path = {};   //!< empty: the default model, generated if missing
  std::string compute = "bf16";  //!< "bf16" or "f32"
  std::string kernels = "auto";  //!< which matmul paths load may measure and choose (auto, onednn, hearth)
  // [engine]
  engine_config engine = {};   //!< includes the [[tenant]] entries
  uint64_t kv_tokens = 16384;  //!< KV pool capacity in positions
  // [engine]: what the workers compute on (docs/cuda.md)
  std::string backend = "cpu";  //!< "cpu" or "cuda"
  uint32_t device = 0;          //!< the CUDA device's ordinal
  //! Disaggregated mode: each worker's backend; empty: `backend`.
  std::string prefill_backend = {}, decode_backend = {};

  bool development_mode() const { return secret_key_file.empty(); }
};

//! The configuration in `toml_text`; `source` names it in errors (`source:line: field ...`).
//! Tenants are read with keys optional; check_tenant_keys applies the CURVE rule afterwards,
//! since a command-line flag may still turn CURVE on.
result<serve_config> parse_serve_config(std::string_view toml_text, std::string_view source = "config");
result<serve_config> load_serve_config(const std::string& path);
//! With a server key, every tenant needs a client key.
status<> check_tenant_keys(const serve_config& c);
//! What a reload changes, for its log line: "policy fcfs -> slo; tenants added: a; removed: b;
//! changed: c (key, quota)", or "nothing changed".
std::string describe_reload(const std::vector<tenant_config>& before, const std::vector<tenant_config>& after,
                            const std::string& policy_before, const std::string& policy_after);

}  // namespace hearth::server
