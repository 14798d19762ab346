// A client process for test_gateway's "killed mid-stream" case: starts N streams of M tokens,
// prints "streaming" once the first token arrives, then waits to be killed.
// Usage: gateway_test_client ENDPOINT N M PROMPT
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "clients/cpp/client.hpp"

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  auto c = hearth::client::client::connect({.endpoint = argv[1], .tenant = "doomed"});
  if (!c) return 1;
  std::vector<hearth::client::stream> streams;
  const int n = std::atoi(argv[2]);
  for (int i = 0; i < n; ++i) {
    auto s = (*c)->start(
        {.prompt = argv[4], .max_tokens = static_cast<uint32_t>(std::atoi(argv[3])), .temperature = 0});
    if (!s) return 1;
    streams.push_back(std::move(*s));
  }
  if (!streams.front().next()) return 1;
  std::puts("streaming");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::minutes(2));
  return 0;
}
