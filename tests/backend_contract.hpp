#pragma once
// The contract every backend keeps (tests/backend_contract.cpp): logits of the reference forward,
// a mixed batch equal to each sequence alone, chunked prefill equal to one shot, block tables in
// any order, bad batches refused before any work. A test binary that links the contract names
// the backends it runs it over.
#include <string>
#include <vector>

#include "model_test_support.hpp"

namespace hearth::test {

struct backend_under_test {
  std::string name;
  backend_loader load;
};

//! Defined once in each binary that links backend_contract.cpp.
const std::vector<backend_under_test>& backends_under_test();

}  // namespace hearth::test
