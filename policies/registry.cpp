// The policies by name: the one place a new policy is registered.
#include "policies/fcfs.hpp"
#include "policies/household.hpp"
#include "policies/priority.hpp"
#include "policies/slo.hpp"
#include "policies/vtc.hpp"

namespace hearth {

namespace {

template <class P>
std::unique_ptr<policy> make() {
  return std::make_unique<P>();
}

struct entry {
  std::string_view name;
  std::unique_ptr<policy> (*make)();
};

constexpr entry registry[] = {
    {"fcfs", make<fcfs_policy>}, {"priority", make<priority_policy>},   {"vtc", make<vtc_policy>},
    {"slo", make<slo_policy>},   {"household", make<household_policy>},
};

}  // namespace

std::unique_ptr<policy> make_policy(std::string_view name) {
  for (const entry& e : registry)
    if (e.name == name) return e.make();
  return nullptr;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const entry& e : registry) names.emplace_back(e.name);
  return names;
}

std::string unknown_policy_message(std::string_view name) {
  std::string m = "unknown policy '";
  m.append(name);
  m += "' (the policies: ";
  for (const entry& e : registry) {
    if (m.back() != ' ') m += ", ";
    m += e.name;
  }
  m += ")";
  return m;
}

}  // namespace hearth
