#include "bench/household/target.hpp"

#include <algorithm>

namespace hearth::household {

reject_reason reject_reason_of(std::string_view code) {
  for (auto r = static_cast<uint8_t>(reject_reason::bad_request);
       r <= static_cast<uint8_t>(reject_reason::internal); ++r)
    if (code == to_string(static_cast<reject_reason>(r))) return static_cast<reject_reason>(r);
  return reject_reason::none;
}

bench_outcome failed_outcome(std::string_view code, std::string_view message, bool accepted) {
  const event_kind kind = code == "cancelled" ? event_kind::cancelled
                          : accepted          ? event_kind::error
                                              : event_kind::rejected;
  std::string text(code);
  text += ": ";
  text += message;
  return {kind, reject_reason_of(code), std::move(text)};
}

void record_end(bench_record& r, double t, const bench_outcome& o) {
  r.end_s = t;
  r.kind = o.kind;
  r.reason = o.reason;
  r.use = o.use;
  r.server = o.time;
  r.preemptions = o.preemptions;
}

request engine_request_of(const bench_request& b, const std::vector<tenant_config>& tenants) {
  request r;
  r.tenant = b.tenant;
  r.prompt = b.prompt_tokens;
  r.max_tokens = b.max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  const auto t = std::find_if(tenants.begin(), tenants.end(),
                              [&](const tenant_config& c) { return c.name == r.tenant; });
  if (t != tenants.end()) r.share_prefix = t->share_prefix;
  return r;
}

}  // namespace hearth::household
