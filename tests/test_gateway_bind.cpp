// What the gateway refuses to bind, though libzmq would bind it: a tcp:// port libzmq wraps into
// another one (99999 -> 34463), an ipc:// path a live server holds (libzmq unlinks it and the
// first server is unreachable from then on), a file that is not a socket (libzmq deletes it).
// And what it must still bind: a crashed server's stale socket file.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gateway_fixture.hpp"
#include "scratch_dir.hpp"

using namespace hearth;
using namespace hearth::test;
using Catch::Matchers::Contains;

namespace {

void check_answers_ping(const served& s) {
  auto c = client::client::connect(s.options());
  if (!c) FAIL(c.error().code << ": " << c.error().message);
  CHECK((*c)->ping().ok());
}

}  // namespace

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

TEST_CASE("a second server on a live ipc path is refused, and the first keeps answering", "[gateway]") {
  scratch_dir d;
  const std::string endpoint = "ipc://" + d.path + "/hearth.sock";
  auto first = served::start({.endpoint = endpoint});
  auto second = server::gateway::start(*first.eng, {.endpoint = endpoint});
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.error().message, Contains("another server is listening on " + endpoint));
  check_answers_ping(first);
}

TEST_CASE("a stale ipc socket left by a crashed server is reclaimed", "[gateway]") {
  scratch_dir d;
  const std::string path = d.path + "/stale.sock";
  // What a crash leaves: a socket file bound and listened on, closed without unlink.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  ::close(fd);
  REQUIRE(std::filesystem::is_socket(path));
  auto s = served::start({.endpoint = "ipc://" + path});
  check_answers_ping(s);
}

TEST_CASE("an ipc path that is not a socket is refused and left as it was", "[gateway]") {
  scratch_dir d;
  const std::string path = d.path + "/notes.txt";
  std::ofstream(path) << "keep me\n";
  auto s = served::start();
  auto g = server::gateway::start(*s.eng, {.endpoint = "ipc://" + path});
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message, Contains("ipc://" + path) && Contains("not a socket"));
  std::string line;
  std::getline(std::ifstream(path), line);
  CHECK(line == "keep me");
}
