#pragma once
// HTTP keys: a client sends `Authorization: Bearer KEY`; the tenants file stores only the
// key's SHA-256 (http_key_sha256), so the file never holds a secret a reader could replay.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tenants/tenant_config.hpp"

namespace hearth::http {

//! The SHA-256 of `text`, 64 lowercase hex digits.
std::string sha256_hex(std::string_view text);

//! Which tenant a request's Authorization header names.
class key_table {
 public:
  //! `anonymous`: who a request without a key is (see gateway_options::anonymous_tenant).
  key_table(const std::vector<tenant_config>& tenants, const std::optional<std::string>& anonymous);
  //! Whether any tenant has an HTTP key: without one, Authorization headers are not read (the
  //! openai package always sends one, often a placeholder).
  bool keyed() const { return !by_hash_.empty(); }
  bool anonymous_allowed() const { return anonymous_.has_value(); }
  //! The tenant of a request with this Authorization header (empty: none), or the refusal's
  //! message for a 401.
  std::optional<std::string> tenant_of(std::string_view authorization, std::string& why) const;

 private:
  std::unordered_map<std::string, std::string> by_hash_;  // sha256 hex -> tenant name
  std::optional<std::string> anonymous_;
};

}  // namespace hearth::http
