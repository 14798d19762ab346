#include "actors/placement.hpp"

#include <hwloc.h>

#include <memory>

namespace hearth {

namespace {

struct topology {
  hwloc_topology_t t = nullptr;
  topology() {
    hwloc_topology_init(&t);
    hwloc_topology_load(t);
  }
  ~topology() { hwloc_topology_destroy(t); }
  topology(const topology&) = delete;
  topology& operator=(const topology&) = delete;
};

using bitmap = std::unique_ptr<hwloc_bitmap_s, void (*)(hwloc_bitmap_t)>;

bitmap make_bitmap() {
  return {hwloc_bitmap_alloc(), hwloc_bitmap_free};
}

std::string to_list(hwloc_const_bitmap_t set) {
  char* s = nullptr;
  hwloc_bitmap_list_asprintf(&s, set);
  std::string out = s ? s : "";
  free(s);  // NOLINT: hwloc allocates with malloc
  return out;
}

}  // namespace

result<pinned> pin_this_thread(const std::string& cpus) {
  const topology topo;
  auto set = make_bitmap();
  if (hwloc_bitmap_list_sscanf(set.get(), cpus.c_str()) != 0) {
    return error{errc::invalid_argument, "placement: '" + cpus + "' is not a cpu list such as 0-3,8"};
  }
  hwloc_bitmap_and(set.get(), set.get(), hwloc_topology_get_allowed_cpuset(topo.t));
  if (hwloc_bitmap_iszero(set.get())) {
    return error{errc::invalid_argument, "placement: '" + cpus + "' names no cpu this process may use"};
  }
  if (hwloc_set_cpubind(topo.t, set.get(), HWLOC_CPUBIND_THREAD) != 0) {
    return error{errc::io, "placement: binding to '" + cpus + "' was refused"};
  }
  return pinned{to_list(set.get()), static_cast<unsigned>(hwloc_bitmap_weight(set.get()))};
}

bool same_numa_nodes(const std::string& a, const std::string& b) {
  const topology topo;
  auto nodes_of = [&](const std::string& cpus) {
    auto set = make_bitmap(), nodes = make_bitmap();
    if (cpus.empty() || hwloc_bitmap_list_sscanf(set.get(), cpus.c_str()) != 0) {
      hwloc_bitmap_copy(set.get(), hwloc_topology_get_allowed_cpuset(topo.t));
    }
    hwloc_cpuset_to_nodeset(topo.t, set.get(), nodes.get());
    return nodes;
  };
  return hwloc_bitmap_isequal(nodes_of(a).get(), nodes_of(b).get()) != 0;
}

unsigned available_cpus() {
  const topology topo;
  return static_cast<unsigned>(hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(topo.t)));
}

}  // namespace hearth
