#pragma once
// A loopback TCP relay in front of a port, for tests of a slow link: the first connection's
// answers (the bytes from the port) are held back for a while, as a handshake under load is;
// later connections pass at once.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace hearth::test {

class tcp_relay {
 public:
  tcp_relay(uint16_t to, std::chrono::milliseconds hold) : to_(to), hold_(hold) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listen_ >= 0);
    sockaddr_in a = loopback(0);
    socklen_t n = sizeof a;
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_, 8) == 0);
    REQUIRE(::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &n) == 0);
    port_ = ntohs(a.sin_port);
    accepter_ = std::thread([this] { accept_all(); });
  }
  ~tcp_relay() {
    stop_ = true;
    accepter_.join();
    for (auto& t : relays_) t.join();
    ::close(listen_);
  }
  tcp_relay(const tcp_relay&) = delete;
  tcp_relay& operator=(const tcp_relay&) = delete;

  uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  static sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
  }

  // Only this thread starts relays_ until the destructor, which joins it first.
  void accept_all() {
    pollfd p{listen_, POLLIN, 0};
    while (!stop_) {
      if (::poll(&p, 1, 20) != 1) continue;
      const int client = ::accept(listen_, nullptr, nullptr);
      if (client < 0) continue;
      const bool hold = connections_++ == 0;
      relays_.emplace_back([this, client, hold] { relay(client, hold); });
    }
  }

  // Both ways until either side closes; the port's bytes wait in the kernel while held.
  void relay(int client, bool hold) {
    const int server = ::socket(AF_INET, SOCK_STREAM, 0);
    const sockaddr_in a = loopback(to_);
    const auto until = std::chrono::steady_clock::now() + (hold ? hold_ : std::chrono::milliseconds(0));
    if (server >= 0 && ::connect(server, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
      char buf[16384];
      while (!stop_) {
        const bool held = std::chrono::steady_clock::now() < until;
        pollfd p[2] = {{client, POLLIN, 0}, {server, static_cast<short>(held ? 0 : POLLIN), 0}};
        if (::poll(p, 2, 20) <= 0) continue;
        const int from = p[0].revents ? client : server;
        const ssize_t got = ::read(from, buf, sizeof buf);
        if (got <= 0 ||
            ::send(from == client ? server : client, buf, static_cast<size_t>(got), MSG_NOSIGNAL) != got)
          break;
      }
    }
    if (server >= 0) ::close(server);
    ::close(client);
  }

  uint16_t to_, port_ = 0;
  std::chrono::milliseconds hold_;
  int listen_ = -1;
  std::atomic<bool> stop_ = false;
  std::atomic<int> connections_ = 0;
  std::thread accepter_;
  std::vector<std::thread> relays_;
};

}  // namespace hearth::test
