#include "actors/worker_credentials.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace hearth {
namespace {

template <class T, void (*Free)(T*)>
struct freer {
  void operator()(T* p) const { Free(p); }
};
using key_ptr = std::unique_ptr<EVP_PKEY, freer<EVP_PKEY, EVP_PKEY_free>>;
using cert_ptr = std::unique_ptr<X509, freer<X509, X509_free>>;
using bio_ptr = std::unique_ptr<BIO, freer<BIO, BIO_free_all>>;

constexpr long ten_years_s = 10L * 366 * 24 * 3600;

// OpenSSL's own words for its last error, after `what`.
error openssl_error(errc code, const std::string& what) {
  char buf[256] = "unknown error";
  if (const unsigned long e = ERR_get_error()) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return error{code, what + ": " + buf};
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `name`, signed by issuer_key (issuer: nullptr for self-signed).
result<cert_ptr> make_cert(EVP_PKEY* key, const char* name, X509* issuer, EVP_PKEY* issuer_key, bool ca) {
  cert_ptr cert(X509_new());
  unsigned char serial[16];
  if (!cert || RAND_bytes(serial, sizeof serial) != 1)
    return openssl_error(errc::io, "keygen: a certificate");
  serial[0] &= 0x7f;  // a positive serial number
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  const bool numbered = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  const bool named = X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                                                reinterpret_cast<const unsigned char*>(name), -1, -1, 0) == 1;
  X509* signer = issuer ? issuer : cert.get();
  const bool ok =
      numbered && named && X509_set_version(cert.get(), 2) == 1 &&
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) &&  // an hour's slack for clocks
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), ten_years_s) && X509_set_pubkey(cert.get(), key) == 1 &&
      X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) == 1 &&
      add_extension(cert.get(), signer, NID_basic_constraints,
                    ca ? "critical,CA:TRUE" : "critical,CA:FALSE") &&
      add_extension(cert.get(), signer, NID_key_usage,
                    ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyAgreement") &&
      (ca || add_extension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth")) &&
      X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0;
  if (!ok) return openssl_error(errc::io, std::string("keygen: the ") + name + " certificate");
  return cert;
}

// Writes PEM text through `write` into a new file of `mode`; refuses an existing one.
template <class Write>
status<> write_pem(const std::string& path, mode_t mode, Write&& write) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return error{errc::io, path + ": cannot create (" + std::strerror(errno) + ")"};
  FILE* f = ::fdopen(fd, "w");
  if (!f) {
    ::close(fd);
    return error{errc::io, path + ": cannot write"};
  }
  bio_ptr bio(BIO_new_fp(f, BIO_CLOSE));
  if (!bio) {
    std::fclose(f);
    return openssl_error(errc::io, path + ": cannot write");
  }
  if (write(bio.get()) != 1) return openssl_error(errc::io, path + ": cannot write");
  return {};
}

template <class T, T* (*Read)(BIO*, T**, pem_password_cb*, void*), void (*Free)(T*)>
result<std::unique_ptr<T, freer<T, Free>>> read_pem(const std::string& path, const char* what) {
  bio_ptr bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) return openssl_error(errc::io, path + ": cannot read the " + what);
  std::unique_ptr<T, freer<T, Free>> x(Read(bio.get(), nullptr, nullptr, nullptr));
  if (!x) return openssl_error(errc::malformed, path + ": not a PEM " + what);
  return x;
}

}  // namespace

worker_credentials credentials_in(const std::string& dir) {
  const std::filesystem::path d(dir);
  return {(d / "ca.crt").string(), (d / "node.crt").string(), (d / "node.key").string()};
}

status<> write_worker_credentials(const std::string& dir) {
  const worker_credentials c = credentials_in(dir);
  for (const auto* p : {&c.ca_cert, &c.node_cert, &c.node_key}) {
    if (std::error_code ec; std::filesystem::exists(*p, ec))
      return error{errc::invalid_argument, *p + ": exists (a set is never overwritten)"};
  }
  std::error_code ec;
  const bool created = std::filesystem::create_directories(dir, ec);
  if (ec) return error{errc::io, dir + ": cannot create (" + ec.message() + ")"};
  if (created) std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  key_ptr ca_key(EVP_EC_gen("P-256")), node_key(EVP_EC_gen("P-256"));
  if (!ca_key || !node_key) return openssl_error(errc::io, "keygen: an EC key");
  auto ca = make_cert(ca_key.get(), "hearth household authority", nullptr, ca_key.get(), true);
  if (!ca) return ca.error();
  auto node = make_cert(node_key.get(), "hearth node", ca->get(), ca_key.get(), false);
  if (!node) return node.error();
  // The key first: a set whose key could not be written leaves no certificates behind it.
  if (auto st = write_pem(c.node_key, 0600,
                          [&](BIO* b) {
                            return PEM_write_bio_PrivateKey(b, node_key.get(), nullptr, nullptr, 0, nullptr,
                                                            nullptr);
                          });
      !st)
    return st;
  if (auto st = write_pem(c.node_cert, 0644, [&](BIO* b) { return PEM_write_bio_X509(b, node->get()); }); !st)
    return st;
  return write_pem(c.ca_cert, 0644, [&](BIO* b) { return PEM_write_bio_X509(b, ca->get()); });
}

status<> check_worker_credentials(const worker_credentials& c) {
  auto ca = read_pem<X509, PEM_read_bio_X509, X509_free>(c.ca_cert, "certificate");
  if (!ca) return ca.error();
  auto node = read_pem<X509, PEM_read_bio_X509, X509_free>(c.node_cert, "certificate");
  if (!node) return node.error();
  auto key = read_pem<EVP_PKEY, PEM_read_bio_PrivateKey, EVP_PKEY_free>(c.node_key, "private key");
  if (!key) return key.error();
  EVP_PKEY* ca_public = X509_get0_pubkey(ca->get());
  if (!ca_public || X509_verify(node->get(), ca_public) != 1) {
    ERR_clear_error();
    return error{errc::invalid_argument, c.node_cert + ": not signed by the authority in " + c.ca_cert};
  }
  if (X509_check_private_key(node->get(), key->get()) != 1) {
    ERR_clear_error();
    return error{errc::invalid_argument, c.node_key + ": not the key of " + c.node_cert};
  }
  for (const auto* cert : {&*ca, &*node}) {
    if (X509_cmp_current_time(X509_get0_notBefore(cert->get())) > 0 ||
        X509_cmp_current_time(X509_get0_notAfter(cert->get())) < 0) {
      return error{errc::invalid_argument, (cert == &*ca ? c.ca_cert : c.node_cert) +
                                               ": outside its dates (expired, or a clock is wrong)"};
    }
  }
  return {};
}

}  // namespace hearth

// CAF 0.17.6's OpenSSL transport reads SSL_get_error without emptying OpenSSL's per-thread error
// queue first, and leaves a reset connection's error in it: the next session served by the same
// multiplexer thread then fails on a harmless "want read", so one worker killed with -9 took
// every other TLS worker of the server down with it (tests/cli/test_worker_netns.sh). These
// wrappers of the calls CAF's session makes empty the queue before each, as OpenSSL requires;
// defined in the executable, they take the place of libssl's for libcaf_openssl too.
namespace {

template <class F>
F next_definition(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

extern "C" int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

extern "C" int SSL_accept(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

extern "C" int SSL_connect(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}
