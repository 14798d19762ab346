#pragma once
// Binding a worker thread to its cores with hwloc. Called on the worker's own thread before its
// first kernel: OpenMP teams started afterwards inherit the binding (docs/threads.md), so the
// worker's oneDNN and kernel threads all stay on its cpuset.

#include <string>

#include "common/result.hpp"

namespace hearth {

struct pinned {
  std::string cpus;     //!< the cpuset the thread is bound to, in list syntax ("0-3")
  unsigned n_cpus = 0;  //!< processing units in it
};

//! Binds the calling thread to `cpus` (hwloc list syntax: "0-3,8"). errc::invalid_argument for
//! a malformed list or one naming no processing unit of this machine; errc::io when the
//! system refuses the binding.
result<pinned> pin_this_thread(const std::string& cpus);
//! The processing units this process may run on.
unsigned available_cpus();
//! Whether two cpusets touch exactly the same NUMA nodes (memory one of them writes is local to
//! the other). An empty or malformed set counts as the whole machine.
bool same_numa_nodes(const std::string& a, const std::string& b);

}  // namespace hearth
