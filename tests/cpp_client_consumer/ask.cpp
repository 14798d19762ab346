// The C++ client README's first example, as another project would write it: ask one question,
// print the streamed answer. Usage: ask ENDPOINT QUESTION
#include <iostream>

#include "clients/cpp/client.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  using namespace hearth::client;
  auto c = client::connect({.endpoint = argv[1], .tenant = "voice"});
  if (!c) {
    std::cerr << c.error().code << ": " << c.error().message << "\n";
    return 1;
  }
  auto done = (*c)->generate({.prompt = argv[2], .max_tokens = 8, .temperature = 0}, [](const token& t) {
    std::cout << t.text << std::flush;
    return true;
  });
  if (!done) {
    std::cerr << done.error().code << ": " << done.error().message << "\n";
    return 1;
  }
  std::cout << "\n" << done->finish_reason << "\n";
  return 0;
}
