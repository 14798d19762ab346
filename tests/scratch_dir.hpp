#pragma once
// A fresh directory under /tmp for a test's files, removed with whatever is left in it.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace hearth::test {

struct scratch_dir {
  std::string path;
  explicit scratch_dir(const std::string& prefix = "hearth") {
    std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()));
    path = tmpl;
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
};

}  // namespace hearth::test
