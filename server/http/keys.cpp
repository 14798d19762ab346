#include "server/http/keys.hpp"

#include <openssl/evp.h>

namespace hearth::http {

std::string sha256_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

key_table::key_table(const std::vector<tenant_config>& tenants, const std::optional<std::string>& anonymous) {
  for (const auto& t : tenants)
    if (!t.http_key_sha256.empty()) by_hash_[t.http_key_sha256] = t.name;
  anonymous_ = anonymous          ? anonymous
               : by_hash_.empty() ? std::optional<std::string>("default")
                                  : std::nullopt;
}

std::optional<std::string> key_table::tenant_of(std::string_view authorization, std::string& why) const {
  if (!keyed() || authorization.empty()) {
    if (anonymous_) return anonymous_;
    why = "a key is required: send 'Authorization: Bearer KEY'";
    return std::nullopt;
  }
  constexpr std::string_view bearer = "Bearer ";
  if (!authorization.starts_with(bearer)) {
    why = "the Authorization header must be 'Bearer KEY'";
    return std::nullopt;
  }
  const auto it = by_hash_.find(sha256_hex(authorization.substr(bearer.size())));
  if (it == by_hash_.end()) {
    why = "the key is not listed for any tenant";
    return std::nullopt;
  }
  return it->second;
}

}  // namespace hearth::http
