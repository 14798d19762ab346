// `hearth keygen --worker`'s credentials (actors/worker_credentials.hpp): a fresh set checks out,
// is never overwritten, keeps its key to its owner, and a set mixed from two households, or a
// file that is not what it should be, is refused naming the file. That CAF's TLS transport takes
// these files and refuses strangers is tests/cli/test_worker_tls.sh's.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "actors/worker_credentials.hpp"
#include "scratch_dir.hpp"

using namespace hearth;

TEST_CASE("worker credentials: a fresh set checks out, its key is the owner's, and it is never overwritten",
          "[credentials]") {
  test::scratch_dir tmp("creds");
  const std::string dir = tmp.path + "/household";
  REQUIRE(write_worker_credentials(dir).ok());
  const worker_credentials c = credentials_in(dir);
  CHECK(check_worker_credentials(c).ok());
  struct stat key {
  }, folder{};
  REQUIRE(::stat(c.node_key.c_str(), &key) == 0);
  REQUIRE(::stat(dir.c_str(), &folder) == 0);
  CHECK((key.st_mode & 0777) == 0600);
  CHECK((folder.st_mode & 0777) == 0700);
  const auto before = std::filesystem::last_write_time(c.node_key);
  auto again = write_worker_credentials(dir);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().code == errc::invalid_argument);
  CHECK(again.error().message == c.ca_cert + ": exists (a set is never overwritten)");
  CHECK(std::filesystem::last_write_time(c.node_key) == before);
}

TEST_CASE("worker credentials: a mixed set, a missing file or one that is not PEM is refused by name",
          "[credentials]") {
  test::scratch_dir tmp("creds");
  const std::string a = tmp.path + "/a", b = tmp.path + "/b";
  REQUIRE(write_worker_credentials(a).ok());
  REQUIRE(write_worker_credentials(b).ok());
  const worker_credentials ca = credentials_in(a), cb = credentials_in(b);
  auto refused = [](const worker_credentials& c, const std::string& message) {
    auto st = check_worker_credentials(c);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message.find(message) != std::string::npos);
    INFO(st.error().message);
  };
  // Another household's certificate, or its key.
  refused({ca.ca_cert, cb.node_cert, cb.node_key},
          cb.node_cert + ": not signed by the authority in " + ca.ca_cert);
  refused({ca.ca_cert, ca.node_cert, cb.node_key}, cb.node_key + ": not the key of " + ca.node_cert);
  refused({ca.ca_cert, ca.node_cert, tmp.path + "/none.key"},
          tmp.path + "/none.key: cannot read the private key");
  std::ofstream(tmp.path + "/noise.crt") << "not a certificate\n";
  refused({tmp.path + "/noise.crt", ca.node_cert, ca.node_key},
          tmp.path + "/noise.crt: not a PEM certificate");
}
