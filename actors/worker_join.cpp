#include "actors/worker_join.hpp"

#include <vector>

namespace hearth {

std::string build_version() {
  return HEARTH_BUILD_VERSION;  // actors/CMakeLists.txt, at configure time
}

join_hello local_hello(std::string model_file, std::string model_sha256) {
  return {worker_wire_version, build_version(), std::move(model_file), std::move(model_sha256)};
}

namespace {

// "abcdef012345..." : enough of a hash to tell two apart in a message.
std::string short_hash(const std::string& hex) {
  return hex.size() > 12 ? hex.substr(0, 12) + "..." : hex;
}

}  // namespace

status<> check_join(const join_hello& worker, const join_hello& server) {
  std::vector<std::string> differ;
  if (worker.wire_version != server.wire_version)
    differ.push_back("wire version " + std::to_string(worker.wire_version) + " here, " +
                     std::to_string(server.wire_version) + " at the server");
  if (worker.build != server.build)
    differ.push_back("build " + worker.build + " here, " + server.build + " at the server");
  if (worker.model_sha256 != server.model_sha256) {
    std::string m = "model file hash differs: ";
    m += worker.model_file + " (" + short_hash(worker.model_sha256) + ") here, ";
    m += server.model_file + " (" + short_hash(server.model_sha256) + ") at the server";
    differ.push_back(std::move(m));
  }
  if (differ.empty()) return {};
  std::string why = "join refused: ";
  for (size_t i = 0; i < differ.size(); ++i) {
    if (i > 0) why += "; ";
    why += differ[i];
  }
  return error{errc::invalid_argument, why};
}

}  // namespace hearth
