#include "core/request.hpp"

namespace hearth {

const char* to_string(event_kind k) {
  switch (k) {
    case event_kind::accepted:
      return "accepted";
    case event_kind::token:
      return "token";
    case event_kind::done:
      return "done";
    case event_kind::cancelled:
      return "cancelled";
    case event_kind::rejected:
      return "rejected";
    case event_kind::error:
      return "error";
  }
  return "?";
}

const char* to_string(finish_reason r) {
  switch (r) {
    case finish_reason::none:
      return "none";
    case finish_reason::eos:
      return "eos";
    case finish_reason::stop:
      return "stop";
    case finish_reason::length:
      return "length";
  }
  return "?";
}

const char* to_string(reject_reason r) {
  switch (r) {
    case reject_reason::none:
      return "none";
    case reject_reason::bad_request:
      return "bad_request";
    case reject_reason::too_long:
      return "too_long";
    case reject_reason::queue_full:
      return "queue_full";
    case reject_reason::over_quota:
      return "over_quota";
    case reject_reason::shutting_down:
      return "shutting_down";
    case reject_reason::internal:
      return "internal";
  }
  return "?";
}

}  // namespace hearth
