#pragma once
// The tenants section of the configuration file: one [[tenant]] table per household service,
// with its key, class, weight, SLO targets and quotas. The shape, every field, its default and
// its limits: docs/configuration.md. Parsing is the edge where toml++'s exceptions end: every
// problem comes back as an `error` naming the source, the line, the tenant and the field.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "policies/policy.hpp"

namespace hearth {

//! Service-level targets in milliseconds; 0 = no target.
struct tenant_slo {
  double ttft_ms = 0;  //!< arrival to first token
  double itl_ms = 0;   //!< between two tokens of a stream
  //! The share of a stream's gaps that must keep itl_ms: 0.9 lets one gap in ten run long (a
  //! prefill chunk), as the household bench judges a stream (its 90th percentile gap).
  double itl_quantile = 0.9;
};

//! Limits admission enforces per tenant; 0 = unlimited.
struct tenant_quota {
  uint32_t max_concurrent = 0;     //!< requests holding KV blocks at once
  uint32_t max_queued = 0;         //!< requests waiting at once
  uint32_t max_prompt_tokens = 0;  //!< tokens in one prompt
  uint32_t tokens_per_minute = 0;  //!< prompt + completion tokens, through a token_bucket
};

struct tenant_config {
  std::string name = {};  //!< 1-64 of [A-Za-z0-9_.-]; in logs, metrics and prefix-cache salts
  std::string key = {};   //!< the client's CURVE public key, Z85 text (40 characters); empty only
                          //!< when keys are optional (development mode)
  //! The SHA-256 (lowercase hex) of the key an HTTP client sends as `Authorization: Bearer KEY`;
  //! empty: no HTTP key (docs/http.md)
  std::string http_key_sha256 = {};
  tenant_class cls = tenant_class::standard;
  double weight = 1;  //!< fair-share weight (> 0)
  tenant_slo slo = {};
  tenant_quota quota = {};
  bool share_prefix = true;  //!< its requests may reuse each other's prefix-cache blocks
                             //!< (never another tenant's: the salt includes the tenant)
  bool admin = false;        //!< may send the protocol's `admin` requests (set_policy, reload)
};

//! Whether every tenant must have a key: `optional` only in development mode, where clients
//! connect without CURVE.
enum class key_rule { required, optional };

//! errc::invalid_argument naming the first tenant and field out of the limits parse_tenants
//! enforces (name, key when set, weight, SLO targets) or a name or key used twice: for tenant
//! tables built in code, e.g. before engine::set_tenants.
status<> check_tenants(const std::vector<tenant_config>& tenants);

//! The tenants of a configuration text; `source` names it in errors (usually its path). Other
//! top-level sections belong to other readers and are ignored; no [[tenant]] at all gives an
//! empty list (the engine runs without tenant configuration).
result<std::vector<tenant_config>> parse_tenants(std::string_view toml_text, key_rule keys,
                                                 std::string_view source = "config");
//! The tenants of the configuration file at `path` (errc::io when it cannot be read).
result<std::vector<tenant_config>> load_tenants(const std::string& path, key_rule keys);

}  // namespace hearth
