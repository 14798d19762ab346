#include "clients/cpp/keys.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <zmq.h>

namespace hearth::client {

namespace {

constexpr size_t z85_chars = 40;

// `name = "value"` on one line, else nothing.
bool read_assignment(const std::string& line, std::string& name, std::string& value) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos) return false;
  auto trim = [](std::string s) {
    const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  name = trim(line.substr(0, eq));
  value = trim(line.substr(eq + 1));
  if (value.size() < 2 || value.front() != '"' || value.back() != '"') return false;
  value = value.substr(1, value.size() - 2);
  return true;
}

// Creates `path` (never replacing a file) with `mode` and writes `text` to it.
status<> write_new_file(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return error{errc::io, path + ": cannot create: " + std::strerror(errno)};
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int write_errno = errno;
  if (::close(fd) != 0 || !ok)
    return error{errc::io, path + ": cannot write: " + std::strerror(ok ? errno : write_errno)};
  return {};
}

}  // namespace

bool is_z85_key(std::string_view z85) {
  if (z85.size() != z85_chars) return false;
  const std::string text(z85);
  uint8_t bytes[32];
  return zmq_z85_decode(bytes, text.c_str()) != nullptr;
}

result<key_pair> generate_key_pair() {
  char pub[z85_chars + 1], sec[z85_chars + 1];
  if (zmq_curve_keypair(pub, sec) != 0)
    return error{errc::unsupported,
                 std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno())};
  return key_pair{pub, sec};
}

result<std::string> public_key_of(std::string_view secret_z85) {
  if (!is_z85_key(secret_z85)) return error{errc::malformed, "not a Z85 key of 40 characters"};
  const std::string sec(secret_z85);
  char pub[z85_chars + 1];
  if (zmq_curve_public(pub, sec.c_str()) != 0)
    return error{errc::unsupported, std::string("cannot derive a public key: ") + zmq_strerror(zmq_errno())};
  return std::string(pub);
}

status<> write_key_file(const std::string& path, const key_pair& keys) {
  const std::string text =
      "# hearth CURVE key pair (ZeroMQ Z85 text). Keep this file secret: it holds the secret key.\n"
      "public = \"" +
      keys.public_key + "\"\nsecret = \"" + keys.secret_key + "\"\n";
  return write_new_file(path, text, 0600);
}

status<> write_public_key_file(const std::string& path, const std::string& public_key) {
  return write_new_file(path, public_key + "\n", 0644);
}

result<std::string> read_public_key(const std::string& text_or_path) {
  if (is_z85_key(text_or_path)) return text_or_path;
  std::ifstream in(text_or_path);
  if (!in)
    return error{errc::io, std::string(text_or_path)
                               .append(": neither a Z85 key of 40 characters nor a file (")
                               .append(std::strerror(errno))
                               .append(")")};
  std::string line, name, value;
  while (std::getline(in, line)) {
    const size_t a = line.find_first_not_of(" \t"), b = line.find_last_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    if (const std::string bare = line.substr(a, b - a + 1); is_z85_key(bare)) return bare;
    if (read_assignment(line, name, value) && name == "public" && is_z85_key(value)) return value;
  }
  return error{errc::malformed,
               text_or_path + ": holds no Z85 public key (a FILE.pub from `hearth keygen`, or its key file)"};
}

result<key_pair> read_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{errc::io, path + ": cannot open: " + std::strerror(errno)};
  key_pair keys;
  std::string line, name, value;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#')
      continue;
    if (!read_assignment(line, name, value) || (name != "public" && name != "secret"))
      return error{errc::malformed,
                   path + ":" + std::to_string(n) + ": expected public = \"...\" or secret = \"...\""};
    if (!is_z85_key(value))
      return error{errc::malformed,
                   path + ":" + std::to_string(n) + ": " + name + " is not a Z85 key of 40 characters"};
    (name == "public" ? keys.public_key : keys.secret_key) = value;
  }
  if (keys.public_key.empty() || keys.secret_key.empty())
    return error{errc::malformed, path + ": needs both public = \"...\" and secret = \"...\""};
  auto derived = public_key_of(keys.secret_key);
  if (!derived) return derived.error();
  if (*derived != keys.public_key)
    return error{errc::malformed, path + ": the public key does not belong to the secret key"};
  return keys;
}

}  // namespace hearth::client
