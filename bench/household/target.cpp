#include "bench/household/target.hpp"

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

}  // namespace hearth::household
