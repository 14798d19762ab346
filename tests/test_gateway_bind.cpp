// What the gateway refuses to bind, though libzmq would bind it: a tcp:// port libzmq wraps into
// another one (99999 -> 34463).
#include <catch2/catch.hpp>

#include "gateway_fixture.hpp"

using namespace hearth;
using namespace hearth::test;
using Catch::Matchers::Contains;

TEST_CASE("the gateway refuses a tcp port that libzmq would wrap or misread", "[gateway]") {
  auto s = served::start();
  for (const std::string port : {"99999", "65536", "-1", "+80", "80x", "", "00"}) {
    const std::string endpoint = "tcp://127.0.0.1:" + port;
    auto g = server::gateway::start(*s.eng, {.endpoint = endpoint});
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.error().message, Contains("endpoint " + endpoint) && Contains("port"));
  }
  auto no_port = server::gateway::start(*s.eng, {.endpoint = "tcp://127.0.0.1"});
  REQUIRE_FALSE(no_port.ok());
  CHECK_THAT(no_port.error().message, Contains("tcp://127.0.0.1: no port"));
}
