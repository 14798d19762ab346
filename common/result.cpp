#include "common/result.hpp"

namespace hearth {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::io:
      return "io";
    case errc::malformed:
      return "malformed";
    case errc::unsupported:
      return "unsupported";
    case errc::limit_exceeded:
      return "limit_exceeded";
  }
  return "unknown";
}

}  // namespace hearth
