// test_seed.hpp: a replay's HEARTH_TEST_SEED reaches the test, a malformed one fails it, and a
// seed sequence is a function of its seed.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "test_seed.hpp"

using namespace hearth;

namespace {

//! Sets HEARTH_TEST_SEED (or unsets it: nullptr) for one test, and puts back what the run had.
class seed_variable {
 public:
  explicit seed_variable(const char* value) {
    if (const char* before = std::getenv("HEARTH_TEST_SEED")) before_ = before;
    set(value);
  }
  ~seed_variable() { set(before_ ? before_->c_str() : nullptr); }
  seed_variable(const seed_variable&) = delete;
  seed_variable& operator=(const seed_variable&) = delete;

  void set(const char* value) {
    if (value)
      setenv("HEARTH_TEST_SEED", value, 1);
    else
      unsetenv("HEARTH_TEST_SEED");
  }

 private:
  std::optional<std::string> before_;
};

}  // namespace

TEST_CASE("HEARTH_TEST_SEED is the seed a test gets", "[test_seed]") {
  seed_variable var("12345");
  CHECK(test::test_seed() == 12345);
  CHECK(test::test_seed() == 12345);  // every draw of a replay: the test runs as it ran
  var.set("18446744073709551615");
  CHECK(test::test_seed() == 18446744073709551615ull);
  var.set(nullptr);
  // Unset: fresh seeds, which agree by chance with probability 2^-64.
  CHECK(test::test_seed() != test::test_seed());
}

TEST_CASE("a seed is decimal digits within 64 bits and nothing else", "[test_seed]") {
  CHECK(test::parse_test_seed("0") == 0u);
  CHECK(test::parse_test_seed("42") == 42u);
  CHECK(test::parse_test_seed("18446744073709551615") == 18446744073709551615ull);
  for (const char* bad :
       {"", "18446744073709551616", "-1", "+1", " 1", "1 ", "1\n", "0x10", "1e3", "12a", "seed"}) {
    CAPTURE(bad);
    CHECK_FALSE(test::parse_test_seed(bad).has_value());
  }
}

// [!shouldfail]: this test passes only if test_seed() fails it. Drawing a fresh seed instead
// would pass it, and so fail here.
TEST_CASE("a malformed HEARTH_TEST_SEED fails the test instead of being ignored",
          "[test_seed][!shouldfail]") {
  seed_variable var("12x");
  (void)test::test_seed();
}

TEST_CASE("a seed sequence is a function of its seed", "[test_seed]") {
  auto draws = [](uint64_t seed) {
    test::seed_sequence seeds(seed);
    std::vector<uint64_t> out;
    for (int i = 0; i < 8; ++i) out.push_back(seeds.next());
    return out;
  };
  const auto a = draws(7);
  CHECK(draws(7) == a);
  CHECK(draws(8) != a);
  CHECK(std::set<uint64_t>(a.begin(), a.end()).size() == a.size());  // successive seeds differ
}
