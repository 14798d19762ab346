// The join between a server and a worker in another process, without the other process: what
// the handshake compares and how it names a difference, the configuration a remote worker
// allows, and a start that cannot reach its worker.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/engine.hpp"
#include "actors/worker_join.hpp"
#include "engine_harness.hpp"

using namespace hearth;
using Catch::Matchers::Contains;

namespace {

const join_hello here = local_hello("models/a.gguf", "1a2b3c4d5e6f7a8b9c0d");

// A loopback port nothing listens on: bound by the kernel's choice, then closed.
uint16_t closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("a join is refused naming each thing that differs", "[worker]") {
  CHECK(check_join(here, here).ok());
  CHECK(here.wire_version == worker_wire_version);
  CHECK(here.build == build_version());
  CHECK_THAT(build_version(), Contains("0."));  // the project's version, then git's description

  join_hello other_file = here;
  other_file.model_file = "models/b.gguf";
  other_file.model_sha256 = "ffee00112233445566";
  const auto file = check_join(here, other_file);
  REQUIRE_FALSE(file.ok());
  CHECK(file.error().code == errc::invalid_argument);
  CHECK(file.error().message ==
        "join refused: model file hash differs: models/a.gguf (1a2b3c4d5e6f...) here, models/b.gguf "
        "(ffee00112233...) at the server");
  // The same file under another path is the same model.
  join_hello moved = here;
  moved.model_file = "/srv/hearth/a.gguf";
  CHECK(check_join(here, moved).ok());

  join_hello other_build = here;
  other_build.build = "0.0.9 (1234567)";
  other_build.wire_version = worker_wire_version + 1;
  const auto build = check_join(here, other_build);
  REQUIRE_FALSE(build.ok());
  CHECK_THAT(build.error().message,
             Contains("wire version " + std::to_string(worker_wire_version) + " here, " +
                      std::to_string(worker_wire_version + 1) + " at the server") &&
                 Contains("; build " + build_version() + " here, 0.0.9 (1234567) at the server"));
}

TEST_CASE("workers in other processes: colocated, each named once, one TLS identity", "[worker]") {
  engine_config two;
  two.workers = {{"a", 1}, {"b", 1}};
  CHECK(check(two).ok());
  two.workers[1] = {"a", 1};
  CHECK_THAT(check(two).error().message, Contains("worker tcp://a:1 is listed twice"));
  two.workers = {{"a", 1, "/x"}, {"b", 1}, {"c", 1, "/y"}};
  CHECK_THAT(check(two).error().message,
             Contains("workers tcp://a:1 and tcp://c:1 name different credentials"));
  two.workers[2].credentials = "/x";
  CHECK(check(two).ok());
  CHECK(shared_credentials(two.workers) == "/x");
  engine_config alone;
  alone.local_worker = true;
  CHECK_THAT(check(alone).error().message,
             Contains("local_worker is for a worker here beside [[engine.worker]]s"));
}

TEST_CASE("a disaggregated pair takes one remote worker per side, each with its role", "[worker]") {
  engine_config split;
  split.mode = placement_mode::disaggregated;
  split.workers = {{"a", 1}};
  CHECK_THAT(check(split).error().message,
             Contains("worker tcp://a:1: under mode = \"disaggregated\" an entry runs one side"));
  split.workers[0].role = worker_role::prefill;
  CHECK(check(split).ok());
  CHECK(remote_side(split, worker_role::prefill) == &split.workers[0]);
  CHECK(remote_side(split, worker_role::decode) == nullptr);  // runs here
  split.workers.push_back({"b", 1});
  split.workers[1].role = worker_role::prefill;
  CHECK_THAT(check(split).error().message,
             Contains("worker tcp://b:1: role = \"prefill\" is taken by worker tcp://a:1 already"));
  split.workers[1].role = worker_role::decode;
  CHECK(check(split).ok());  // both sides remote
  split.kv_handoff = kv_handoff_mode::share;
  CHECK_THAT(check(split).error().message,
             Contains("worker tcp://a:1: role = \"prefill\" puts that side on another node") &&
                 Contains("kv_handoff = \"share\" needs both sides here"));
  split.kv_handoff = kv_handoff_mode::copy;
  split.local_worker = true;
  CHECK_THAT(check(split).error().message, Contains("local_worker is for data-parallel workers"));
  engine_config colocated;
  colocated.workers = {{"a", 1}};
  colocated.workers[0].role = worker_role::decode;
  CHECK_THAT(check(colocated).error().message,
             Contains("worker tcp://a:1: role = \"decode\" needs mode = \"disaggregated\""));
}

TEST_CASE("a start that cannot join its worker fails, naming the worker", "[worker]") {
  const auto& m = test::tiny();
  auto never = []() -> result<std::unique_ptr<backend>> {
    FAIL("a remote worker's engine loads no backend of its own");
    return error{errc::io, "unreachable"};
  };
  engine_config cfg;
  cfg.workers = {{"127.0.0.1", closed_port()}};
  const auto unhashed = engine::start(cfg, m.tok, never);
  REQUIRE_FALSE(unhashed.ok());
  CHECK_THAT(unhashed.error().message, Contains("needs the model file's hash"));
  const auto refused = engine::start(cfg, m.tok, never, {}, {}, here);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == errc::io);
  CHECK_THAT(refused.error().message, Contains("worker " + cfg.workers[0].text() + ": cannot connect"));
}
