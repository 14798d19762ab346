#include <catch2/catch.hpp>

#include "core/stop_matcher.hpp"

using namespace hearth;

TEST_CASE("stop strings split across pushes are never shown", "[stop_matcher]") {
  stop_matcher m({"</end>", "STOP"});
  std::string shown;
  for (const char* piece : {"Hello ", "wor", "ld <", "/en", "d> more"}) shown += m.push(piece);
  CHECK(m.stopped());
  CHECK(shown == "Hello world ");
  CHECK(m.push("later").empty());
}

TEST_CASE("text that only looks like a stop string's start is released", "[stop_matcher]") {
  stop_matcher m({"abc"});
  CHECK(m.push("xa") == "x");
  CHECK(m.push("b") == "");
  CHECK(m.push("d") == "abd");
  CHECK(m.push("ab") == "");
  CHECK(m.flush() == "ab");
  CHECK_FALSE(m.stopped());
}

TEST_CASE("the earliest of several stop strings wins, and empty ones are ignored", "[stop_matcher]") {
  stop_matcher m({"", "cd", "bcd"});
  CHECK(m.push("abcde") == "a");
  stop_matcher none({});
  CHECK(none.push("anything") == "anything");
}
