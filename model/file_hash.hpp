#pragma once
// A model file's identity across machines: the SHA-256 of its bytes, as `sha256sum FILE` prints
// it, so an operator can compare two machines' files by hand. SHA-256 rather than a faster
// non-cryptographic hash: OpenSSL's runs at ~1.6 GB/s with the SHA extensions (AMD EPYC here;
// ~0.5 GB/s without them), so a 1 GB file costs well under the time its weights take to load,
// once per process start, and needs no new library.

#include <string>

#include "common/result.hpp"

namespace hearth {

//! The file's SHA-256 in lowercase hex; errc::io naming the file when it cannot be read.
result<std::string> file_sha256(const std::string& path);

}  // namespace hearth
