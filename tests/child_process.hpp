#pragma once
// A test's child process with its stdout on a pipe, for the tests that read what a real process
// prints (where a `hearth worker` listens, when a gateway client streams) and then stop or kill it.
#include <catch2/catch.hpp>

#include <spawn.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace hearth::test {

struct piped_child {
  pid_t pid = -1;
  int out = -1;  //!< the read end of its stdout, the caller's to close
};

//! `path` run with `args` (argv[0] first) and this environment, its stdout into a pipe.
inline piped_child spawn_piped(const std::string& path, std::vector<std::string> args) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  piped_child child;
  const int rc = ::posix_spawn(&child.pid, path.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) ::close(out[0]);
  REQUIRE(rc == 0);
  child.out = out[0];
  return child;
}

}  // namespace hearth::test
