// The endpoint checks on their own (server/endpoint.hpp): which tcp:// ports pass, and that
// every refusal names the endpoint and the port. What they prevent at the gateway, and the
// ipc:// path checks against real sockets: test_gateway_bind.cpp.
#include <catch2/catch.hpp>

#include "common/endpoint_mistake.hpp"
#include "server/endpoint.hpp"

using namespace hearth::server;
using Catch::Matchers::Contains;

TEST_CASE("a tcp port is a decimal number from 1 to 65535, or * or 0 for a free port", "[serve]") {
  for (const char* ok :
       {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:1", "tcp://127.0.0.1:65535", "tcp://127.0.0.1:*",
        "tcp://127.0.0.1:0", "tcp://127.0.0.1:05555", "tcp://[::1]:5555", "tcp://::1:5555", "tcp://*:80",
        "tcp://localhost:8080", "tcp://eth0:5555", "ipc:///run/hearth.sock", "ipc://@hearth", "inproc://x"}) {
    INFO(ok);
    CHECK(check_endpoint_port(ok).ok());
  }
  // What libzmq's atoi makes of them: 34463, 0 (refused by libzmq), 65535, 80, 80, 0, ...
  for (const std::string port :
       {"99999", "65536", "00", "-1", "+80", "80x", "0x50", " 80", "80 ", "**", "99999999999999999999999"}) {
    const std::string endpoint = "tcp://127.0.0.1:" + port;
    const auto st = check_endpoint_port(endpoint);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == hearth::errc::invalid_argument);
    CHECK_THAT(st.error().message,
               Contains(endpoint + ": port " + port + " is not a decimal number from 1 to 65535"));
  }
  for (const char* no_port : {"tcp://127.0.0.1", "tcp://127.0.0.1:", "tcp://[::1]", "tcp://"}) {
    INFO(no_port);
    const auto st = check_endpoint_port(no_port);
    REQUIRE_FALSE(st.ok());
    CHECK_THAT(st.error().message, Contains(std::string(no_port) + ": no port"));
  }
}

TEST_CASE("check_bindable names the endpoint and leaves a missing ipc path to bind", "[serve]") {
  const auto st = check_bindable("tcp://127.0.0.1:99999");
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Contains("endpoint tcp://127.0.0.1:99999: port 99999"));
  CHECK(check_bindable("ipc:///nonexistent-hearth-dir/hearth.sock").ok());
  CHECK(check_bindable("tcp://127.0.0.1:*").ok());
}

TEST_CASE("an endpoint without a scheme is refused with the one it meant", "[serve]") {
  const std::pair<const char*, const char*> cases[] = {
      {"localhost:5555", "localhost:5555 has no scheme: did you mean tcp://localhost:5555?"},
      {"127.0.0.1:5555", "127.0.0.1:5555 has no scheme: did you mean tcp://127.0.0.1:5555?"},
      {"5555", "5555 has no scheme: did you mean tcp://127.0.0.1:5555?"},
      {"http://127.0.0.1:11434",
       "http://127.0.0.1:11434: ZeroMQ endpoints are tcp://HOST:PORT or ipc://PATH "
       "(the HTTP APIs are `hearth serve --http HOST:PORT`)"},
      {"", "(empty): write tcp://HOST:PORT or ipc://PATH"}};
  for (const auto& [endpoint, message] : cases) {
    INFO(endpoint);
    CHECK(hearth::endpoint_mistake(endpoint) == message);
    // The server's check says the same, at load (with the field) and at bind.
    const auto st = check_bindable(endpoint);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message == std::string("endpoint ").append(message));
  }
  for (const char* ok : {"tcp://localhost:5555", "ipc:///run/hearth.sock", "inproc://x"})
    CHECK_FALSE(hearth::endpoint_mistake(ok));
}
