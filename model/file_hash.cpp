#include "model/file_hash.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace hearth {

result<std::string> file_sha256(const std::string& path) {
  auto fail = [&](const char* what) {
    return error{errc::io, path + ": " + what + ": " + std::strerror(errno)};
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) return fail("cannot open");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    return error{errc::io, path + ": cannot start a SHA-256 digest"};
  std::vector<unsigned char> chunk(size_t{1} << 20);  // 1 MiB reads: the digest, not the reads, bounds it
  for (;;) {
    const size_t n = std::fread(chunk.data(), 1, chunk.size(), f.get());
    if (n > 0) EVP_DigestUpdate(ctx.get(), chunk.data(), n);
    if (n < chunk.size()) {
      if (std::ferror(f.get())) return fail("cannot read");
      break;
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &size);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace hearth
