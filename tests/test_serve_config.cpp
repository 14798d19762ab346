// `hearth serve`'s configuration file ([server], [model], [engine] next to [[tenant]]) and the
// key files of `hearth keygen`: every field read, every bad one named with its line.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "clients/cpp/keys.hpp"
#include "server/serve_config.hpp"

using namespace hearth;
using namespace hearth::server;
using Catch::Matchers::Contains;

namespace {

std::string error_for(const std::string& text) {
  const auto r = parse_serve_config(text, "home.toml");
  REQUIRE_FALSE(r.ok());
  return r.error().message;
}

}  // namespace

TEST_CASE("serve's configuration reads every section", "[serve]") {
  const auto r = parse_serve_config(R"(
[server]
endpoint = "tcp://0.0.0.0:6000"
secret_key_file = "/etc/hearth/server.key"
max_message_bytes = 65536
heartbeat_ms = 500
drain_timeout_s = 5
log_level = "warning"

[model]
path = "/var/lib/hearth/small.gguf"
compute = "f32"
kernels = "onednn"

[engine]
max_batched_tokens = 512
max_seqs = 32
long_prefill_threshold = 0
max_partial_prefills = 3
max_preemptions = 2
policy = "household"
max_waiting = 100
max_waiting_tokens = 50000
mode = "disaggregated"
worker_cpus = "0-1"
decode_cpus = "2-3"
kv_handoff = "copy"
threads_per_worker = 2
kv_tokens = 32768
backend = "cuda"
device = 1
prefill_backend = "cuda"
decode_backend = "cpu"

[[tenant]]
name = "voice"
key = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
)");
  REQUIRE(r.ok());
  CHECK(r->endpoint == "tcp://0.0.0.0:6000");
  CHECK(r->secret_key_file == "/etc/hearth/server.key");
  CHECK_FALSE(r->development_mode());
  CHECK(r->max_message_bytes == 65536);
  CHECK(r->heartbeat_ms == 500);
  CHECK(r->drain_timeout_s == 5);
  CHECK(r->log_level == "warning");
  CHECK(r->model_path == "/var/lib/hearth/small.gguf");
  CHECK(r->compute == "f32");
  CHECK(r->kernels == "onednn");
  const engine_config& e = r->engine;
  CHECK((e.max_batched_tokens == 512 && e.max_seqs == 32 && e.long_prefill_threshold == 0));
  CHECK((e.max_partial_prefills == 3 && e.max_preemptions == 2 && e.policy == "household"));
  CHECK((e.max_waiting == 100 && e.max_waiting_tokens == 50000));
  CHECK(e.mode == placement_mode::disaggregated);
  CHECK((e.worker_cpus == "0-1" && e.decode_cpus == "2-3" && e.kv_handoff == kv_handoff_mode::copy));
  CHECK(e.threads_per_worker == 2);
  CHECK(r->kv_tokens == 32768);
  CHECK(
      (r->backend == "cuda" && r->device == 1 && r->prefill_backend == "cuda" && r->decode_backend == "cpu"));
  REQUIRE(e.tenants.size() == 1);
  CHECK(e.tenants[0].name == "voice");
}

TEST_CASE("an empty configuration is development mode with the defaults", "[serve]") {
  const auto r = parse_serve_config("");
  REQUIRE(r.ok());
  CHECK(r->development_mode());
  CHECK(r->endpoint == "tcp://127.0.0.1:5555");
  CHECK(r->max_message_bytes == 1 << 20);
  CHECK(r->heartbeat_ms == 1000);
  CHECK(r->drain_timeout_s == 30);
  CHECK(r->log_level == "info");
  CHECK(r->engine.policy == "household");
  CHECK((r->backend == "cpu" && r->device == 0 && r->prefill_backend.empty() && r->decode_backend.empty()));
}

TEST_CASE("bad fields are named with their line", "[serve]") {
  CHECK_THAT(error_for("[server]\nendpont = \"x\""),
             Contains("home.toml:2: [server].endpont is not a known field"));
  CHECK_THAT(error_for("[server]\nheartbeat_ms = 5"),
             Contains("home.toml:2: [server].heartbeat_ms must be from 10"));
  CHECK_THAT(error_for("[server]\ndrain_timeout_s = -1"),
             Contains("home.toml:2: [server].drain_timeout_s must be from 0"));
  CHECK_THAT(error_for("[server]\nendpoint = 5"), Contains("[server].endpoint must be a string"));
  CHECK_THAT(error_for("[model]\ncompute = \"int4\""),
             Contains("home.toml:2: [model].compute must be one of"));
  CHECK_THAT(error_for("[server]\nlog_level = \"loud\""),
             Contains("home.toml:2: [server].log_level must be one of"));
  CHECK_THAT(error_for("[model]\nkernels = \"fast\""),
             Contains("home.toml:2: [model].kernels must be one of"));
  CHECK_THAT(error_for("[engine]\nmax_seqs = 0"), Contains("[engine].max_seqs must be from 1"));
  CHECK_THAT(error_for("[engine]\nmax_seqs = 1.5"), Contains("[engine].max_seqs must be a whole number"));
  CHECK_THAT(error_for("[engine]\nmode = \"split\""), Contains("[engine].mode must be one of"));
  CHECK_THAT(error_for("[engine]\nbackend = \"tpu\""),
             Contains("home.toml:2: [engine].backend must be one of \"cpu\", \"cuda\" (got \"tpu\")"));
  CHECK_THAT(error_for("[engine]\ndevice = -1"), Contains("home.toml:2: [engine].device must be from 0"));
  CHECK_THAT(error_for("[engine]\ndecode_backend = \"cpu\""),
             Contains("home.toml:2: [engine].decode_backend needs mode = \"disaggregated\""));
  // Every field with a set of values lists them all.
  CHECK_THAT(error_for("[engine]\npolicy = \"nosuch\""),
             Contains("home.toml:2: [engine].policy must be one of \"fcfs\", \"priority\", \"vtc\", \"slo\", "
                      "\"household\" (got \"nosuch\")"));
  CHECK_THAT(
      error_for("[server]\nendpoint = \"localhost:5555\""),
      Contains(
          "home.toml:2: [server].endpoint localhost:5555 has no scheme: did you mean tcp://localhost:5555?"));
  CHECK_THAT(error_for("engine = 3"), Contains("[engine] must be a table"));
  CHECK_THAT(error_for("[server\n"), Contains("home.toml:1:"));
  CHECK_THAT(error_for("[[tenant]]\nname = \"a b\""), Contains("tenant"));
  CHECK_THAT(error_for("[http]\ntls_cert = \"/etc/hearth/tls.crt\""),
             Contains("home.toml:2: [http].tls_cert needs tls_key too"));
  CHECK_THAT(error_for("[http]\ntls_key = \"k.pem\""), Contains("[http].tls_key needs tls_cert too"));
}

TEST_CASE("a misspelt section, or a field outside any section, is refused", "[serve]") {
  // Ignored, [sever] would have left the server in development mode on the default endpoint.
  const auto typo = error_for(
      "\n[sever]\nsecret_key_file = \"/etc/hearth/server.key\"\nendpoint = \"tcp://0.0.0.0:6000\"\n");
  CHECK_THAT(typo, Contains("home.toml:2: [sever] is not a known section") &&
                       Contains("(known: [server], [http], [model], [engine], [[tenant]])"));
  CHECK_THAT(error_for("[[tenants]]\nname = \"voice\"\n"),
             Contains("home.toml:1: [[tenants]] is not a known section"));
  CHECK_THAT(error_for("policy = \"vtc\"\n[engine]\n"),
             Contains("home.toml:1: policy is outside any section (known:"));
}

TEST_CASE("a tcp port libzmq would wrap or misread is refused at load", "[serve]") {
  CHECK_THAT(error_for("[server]\nendpoint = \"tcp://127.0.0.1:99999\""),
             Contains("home.toml:2: [server].endpoint tcp://127.0.0.1:99999: port 99999 is not a decimal "
                      "number from 1 to 65535"));
  CHECK_THAT(error_for("[server]\nendpoint = \"tcp://0.0.0.0:-1\""),
             Contains("home.toml:2: [server].endpoint tcp://0.0.0.0:-1: port -1"));
  CHECK_THAT(error_for("[server]\nendpoint = \"tcp://127.0.0.1\""),
             Contains("[server].endpoint tcp://127.0.0.1: no port"));
  for (const char* ok :
       {"tcp://127.0.0.1:*", "tcp://127.0.0.1:0", "tcp://[::1]:65535", "ipc:///run/hearth.sock"}) {
    const auto r = parse_serve_config(std::string("[server]\nendpoint = \"") + ok + "\"");
    REQUIRE(r.ok());
    CHECK(r->endpoint == ok);
  }
}

TEST_CASE("[[engine.worker]] names a worker in another process, refused naming its line", "[serve]") {
  const auto r = parse_serve_config(
      "[engine]\nmax_seqs = 8\n[[engine.worker]]\nendpoint = \"tcp://[fd00::2]:7100\"\n"
      "credentials = \"/etc/hearth/workers\"\n");
  REQUIRE(r.ok());
  REQUIRE(r->engine.workers.size() == 1);
  CHECK(r->engine.workers[0].credentials == "/etc/hearth/workers");
  CHECK(r->engine.workers[0].host == "fd00::2");
  CHECK(r->engine.workers[0].port == 7100);
  CHECK(r->engine.workers[0].text() == "tcp://[fd00::2]:7100");
  CHECK(parse_serve_config("").value().engine.workers.empty());  // the default: the worker runs here
  CHECK_THAT(error_for("[[engine.worker]]\nendpoint = \"tcp://box:7100\"\ncpus = \"0-3\""),
             Contains("home.toml:3: [engine.worker].cpus is not a known field"));
  CHECK_THAT(
      error_for("[[engine.worker]]\nendpoint = \"box:7100\""),
      Contains("home.toml:2: [engine.worker].endpoint box:7100: a worker endpoint is tcp://HOST:PORT"));
  CHECK_THAT(
      error_for("[[engine.worker]]\nendpoint = \"tcp://box:0\""),
      Contains("home.toml:2: [engine.worker].endpoint tcp://box:0: PORT must be a number from 1 to 65535"));
  CHECK_THAT(error_for("[[engine.worker]]\nendpoint = \"tcp://*:7100\""),
             Contains("[engine.worker].endpoint tcp://*:7100: HOST * is for listening"));
  CHECK_THAT(error_for("[[engine.worker]]\n"), Contains("home.toml:1: [engine.worker].endpoint is missing"));
  CHECK_THAT(error_for("[engine]\nworker = \"tcp://box:7100\""),
             Contains("home.toml:2: [engine].worker must be tables: write [[engine.worker]]"));
  // Several: data parallel, each worker named once, one TLS identity for the server.
  const auto two = parse_serve_config(
      "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\n[[engine.worker]]\nendpoint = "
      "\"tcp://localhost:2\"");
  REQUIRE(two.ok());
  CHECK(two->engine.workers.size() == 2);
  CHECK_THAT(error_for("[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\n[[engine.worker]]\nendpoint = "
                       "\"tcp://127.0.0.1:1\""),
             Contains("home.toml:4: [engine.worker] worker tcp://127.0.0.1:1 is listed twice"));
  CHECK_THAT(
      error_for("[[engine.worker]]\nendpoint = \"tcp://a:1\"\ncredentials = \"/x\"\n[[engine.worker]]\n"
                "endpoint = \"tcp://b:1\"\ncredentials = \"/y\""),
      Contains("home.toml:5: [engine.worker] workers tcp://a:1 and tcp://b:1 name different credentials"));
  // Off this machine, never without credentials; loopback may go plain.
  CHECK_THAT(
      error_for("[[engine.worker]]\nendpoint = \"tcp://box:7100\""),
      Contains("home.toml:2: [engine.worker].endpoint worker tcp://box:7100: off this machine the channel "
               "needs credentials"));
  for (const char* near : {"tcp://127.0.0.1:7100", "tcp://[::1]:7100", "tcp://localhost:7100"}) {
    CAPTURE(near);
    CHECK(parse_serve_config(std::string("[[engine.worker]]\nendpoint = \"") + near + "\"\n").ok());
  }
}

TEST_CASE("[[engine.worker]] role puts one side of a disaggregated pair elsewhere, refused naming its line",
          "[serve]") {
  const std::string split = "[engine]\nmode = \"disaggregated\"\n";
  const auto r = parse_serve_config(
      split + "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:7100\"\nrole = \"prefill\"\n");
  REQUIRE(r.ok());
  CHECK(r->engine.workers.at(0).role == worker_role::prefill);
  const auto both =
      parse_serve_config(split +
                         "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\nrole = \"decode\"\n"
                         "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:2\"\nrole = \"prefill\"\n");
  REQUIRE(both.ok());
  CHECK(both->engine.workers.at(0).role == worker_role::decode);
  CHECK(both->engine.workers.at(1).role == worker_role::prefill);
  CHECK_THAT(
      error_for(split + "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\nrole = \"verify\""),
      Contains("home.toml:5: [engine.worker].role must be one of \"prefill\", \"decode\" (got \"verify\")"));
  CHECK_THAT(
      error_for(split + "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\nrole = \"decode\"\n"
                        "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:2\"\nrole = \"decode\""),
      Contains("home.toml:8: [engine.worker].role worker tcp://127.0.0.1:2: role = \"decode\" is taken by "
               "worker tcp://127.0.0.1:1 already; one worker per side"));
  CHECK_THAT(
      error_for(split + "[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\""),
      Contains("home.toml:4: [engine.worker] worker tcp://127.0.0.1:1: under mode = \"disaggregated\" an "
               "entry runs one side: role = \"prefill\" or \"decode\""));
  CHECK_THAT(
      error_for("[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\nrole = \"prefill\""),
      Contains("home.toml:3: [engine.worker].role worker tcp://127.0.0.1:1: role = \"prefill\" needs mode = "
               "\"disaggregated\""));
  CHECK_THAT(
      error_for(split + "kv_handoff = \"share\"\n[[engine.worker]]\nendpoint = \"tcp://127.0.0.1:1\"\n"
                        "role = \"decode\""),
      Contains(
          "home.toml:6: [engine.worker].role worker tcp://127.0.0.1:1: role = \"decode\" puts that side on "
          "another node, whose KV blocks are copied: kv_handoff = \"share\" needs both sides here"));
}

TEST_CASE("a worker endpoint to listen on may take every address and a free port", "[serve]") {
  auto any = parse_worker_endpoint("tcp://*:0", true);
  REQUIRE(any.ok());
  CHECK(any->host.empty());
  CHECK(any->port == 0);
  CHECK(any->text() == "tcp://*:0");
  CHECK(parse_worker_endpoint("tcp://127.0.0.1:7100").value().host == "127.0.0.1");
  for (const char* bad : {"tcp://h:65536", "tcp://h:7x", "tcp://h:", "tcp://:7100", "tcp://h", "udp://h:1",
                          "tcp://[::1:7100", "tcp://h:-1"}) {
    const auto r = parse_worker_endpoint(bad, true);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains(bad));
  }
}

TEST_CASE("with a server key every tenant needs a client key", "[serve]") {
  auto r = parse_serve_config("[server]\nsecret_key_file = \"s.key\"\n[[tenant]]\nname = \"voice\"\n");
  REQUIRE(r.ok());  // keys are checked once the flags are applied
  const auto st = check_tenant_keys(*r);
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Contains("tenant 'voice': key is missing"));
  r->secret_key_file.clear();
  CHECK(check_tenant_keys(*r).ok());
}

TEST_CASE("key files: written 0600, read back, never overwritten, checked", "[serve]") {
  char tmpl[] = "/tmp/hearth_keys_XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string dir = tmpl, path = dir + "/k.key";
  const auto pair = client::generate_key_pair();
  REQUIRE(pair.ok());
  REQUIRE(client::write_key_file(path, *pair).ok());
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  const auto back = client::read_key_file(path);
  REQUIRE(back.ok());
  CHECK(back->public_key == pair->public_key);
  CHECK(back->secret_key == pair->secret_key);
  CHECK_FALSE(client::write_key_file(path, *pair).ok());
  // A public key that is not the secret's, and a broken line, are refused.
  const auto other = client::generate_key_pair();
  std::ofstream(dir + "/mixed.key") << "public = \"" << other->public_key << "\"\nsecret = \""
                                    << pair->secret_key << "\"\n";
  CHECK_THAT(client::read_key_file(dir + "/mixed.key").error().message, Contains("does not belong"));
  std::ofstream(dir + "/bad.key") << "public = " << other->public_key << "\n";
  CHECK_THAT(client::read_key_file(dir + "/bad.key").error().message, Contains("bad.key:1:"));
  CHECK_FALSE(client::read_key_file(dir + "/none.key").ok());
  for (const char* f : {"/k.key", "/mixed.key", "/bad.key"}) ::unlink((dir + f).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("a reload says what it changed: policy, tenants added, removed and changed", "[serve]") {
  const std::vector<tenant_config> before = {
      {.name = "voice", .key = "k1"}, {.name = "docs"}, {.name = "jobs"}};
  std::vector<tenant_config> after = {{.name = "voice", .key = "k2"}, {.name = "docs"}, {.name = "garden"}};
  after[1].quota.max_queued = 4;
  after[1].admin = true;
  CHECK(
      describe_reload(before, after, "fcfs", "slo") ==
      "policy fcfs -> slo; tenants added: garden; removed: jobs; changed: voice (key), docs (quota, admin)");
  CHECK(describe_reload(before, before, "slo", "slo") == "nothing changed (policy slo, 3 tenant(s))");
  CHECK(describe_reload(before, {}, "household", "fcfs") ==
        "policy household -> fcfs; removed: voice, docs, jobs");
}
