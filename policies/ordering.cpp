#include "policies/ordering.hpp"

namespace hearth::policy_detail {

const tenant_view& tenant_of(const policy_snapshot& s, const request_view& r) {
  static const tenant_view default_tenant{};
  if (s.tenants.empty()) return default_tenant;
  assert(r.tenant_index < s.tenants.size() && "request_view::tenant_index outside policy_snapshot::tenants");
  return s.tenants[r.tenant_index];
}

}  // namespace hearth::policy_detail
