#pragma once
// CURVE key pairs and the key file `hearth keygen` writes, read by `hearth serve` (its secret
// key) and by clients (their pair). The file is TOML-compatible text, mode 0600:
//
//   # hearth CURVE key pair (ZeroMQ Z85 text). Keep this file secret: it holds the secret key.
//   public = "<40 characters>"
//   secret = "<40 characters>"
//
// `hearth keygen -o NAME.key` writes NAME.pub beside it too (mode 0644): the public key alone,
// for the other side (a server's for its clients, a client's for the tenants file).

#include <string>
#include <string_view>

#include "common/result.hpp"

namespace hearth::client {

struct key_pair {
  std::string public_key;  //!< Z85, 40 characters
  std::string secret_key;  //!< Z85, 40 characters
};

//! Whether `z85` is the Z85 text of a 32-byte key.
bool is_z85_key(std::string_view z85);
//! A fresh pair from libzmq (libsodium's random source).
result<key_pair> generate_key_pair();
//! The public key belonging to a secret key.
result<std::string> public_key_of(std::string_view secret_z85);
//! Writes the key file with mode 0600; refuses to replace an existing file.
status<> write_key_file(const std::string& path, const key_pair& keys);
//! Reads a key file; checks both keys and that the public one belongs to the secret one.
result<key_pair> read_key_file(const std::string& path);
//! Writes a .pub file: the public key alone on one line, mode 0644; never replaces a file.
status<> write_public_key_file(const std::string& path, const std::string& public_key);
//! A public key given as its Z85 text, or as a file holding it: a .pub file (one bare key) or
//! a key file (its `public = "..."`).
result<std::string> read_public_key(const std::string& text_or_path);

}  // namespace hearth::client
