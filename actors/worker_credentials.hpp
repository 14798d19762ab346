#pragma once
// The credentials a household's Hearth nodes (the server and its workers) prove themselves with
// over CAF's OpenSSL transport: one certificate authority, and one node key and certificate it
// signed, shared by every node. A node accepts a peer only if the peer presents a certificate of
// that authority (CAF 0.17.6 verifies both ends once a certificate and CA file are set; without
// them it would fall back to anonymous ciphers, which Hearth never allows). The authority's own
// key is not kept: nobody can sign another node in, so a household that loses a machine makes a
// new set (`hearth keygen --worker DIR`) and copies it to every node again.
//
//   DIR/ca.crt     the authority's certificate (public)
//   DIR/node.crt   the nodes' certificate (public)
//   DIR/node.key   the nodes' private key, mode 0600

#include <string>

#include "common/result.hpp"

namespace hearth {

struct worker_credentials {
  std::string ca_cert, node_cert, node_key;  //!< the three files' paths
};

//! The three files' paths in `dir`.
worker_credentials credentials_in(const std::string& dir);

//! Writes a fresh set into `dir` (created if missing, 0700): an EC P-256 authority and node pair,
//! ten years valid. errc::invalid_argument when any of the files exists (a set is never
//! overwritten or split), errc::io naming the file that cannot be written.
status<> write_worker_credentials(const std::string& dir);

//! Checks a set before a node starts: each file readable and PEM, the node certificate signed by
//! the authority and within its dates, the key the certificate's. Errors name the file.
status<> check_worker_credentials(const worker_credentials& c);

}  // namespace hearth
