// The policies by name: the one place a new policy is registered.
#include "policies/fcfs.hpp"

namespace hearth {

std::unique_ptr<policy> make_policy(std::string_view name) {
  if (name == "fcfs") return std::make_unique<fcfs_policy>();
  return nullptr;
}

std::vector<std::string> policy_names() { return {"fcfs"}; }

}  // namespace hearth
