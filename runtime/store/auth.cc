#include "runtime/store/auth.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::store::auth {
namespace {

constexpr const char* kScheme = "hmac-sha256 ";
constexpr char kHexDigits[] = "0123456789abcdef";

std::string openssl_reason() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "no reason given";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

std::string random_bytes(size_t bytes) {
  std::string out(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(bytes)) != 1) {
    fail(Status::kInternal, concat("the store handshake cannot draw random bytes from OpenSSL (", openssl_reason(),
                                   "); is the system's random source (getrandom, /dev/urandom) available?"));
  }
  return out;
}

std::string hex(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHexDigits[c >> 4]);
    out.push_back(kHexDigits[c & 15]);
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string nonce() { return random_bytes(kNonceBytes); }

std::string random_secret_hex(size_t bytes) { return hex(random_bytes(bytes)); }

std::string proof(const std::string& secret, Side side, const std::string& client_nonce,
                  const std::string& server_nonce) {
  std::string message = side == Side::kClient ? "tutti-store client proof" : "tutti-store server proof";
  message += client_nonce;
  message += server_nonce;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length) == nullptr ||
      length != kProofBytes) {
    fail(Status::kInternal, concat("the store handshake cannot compute HMAC-SHA256 with OpenSSL (", openssl_reason(),
                                   "); please report this with your OpenSSL version"));
  }
  return std::string(reinterpret_cast<const char*>(mac), length);
}

bool same(const std::string& expected, const std::string& got) {
  return expected.size() == got.size() && CRYPTO_memcmp(expected.data(), got.data(), expected.size()) == 0;
}

std::string token(const std::string& bytes) { return kScheme + hex(bytes); }

std::optional<std::string> parse_token(const std::string& text, size_t bytes) {
  std::string_view scheme(kScheme);
  if (text.size() != scheme.size() + 2 * bytes || text.compare(0, scheme.size(), scheme) != 0) return std::nullopt;
  std::string out;
  out.reserve(bytes);
  for (size_t i = scheme.size(); i < text.size(); i += 2) {
    int high = hex_value(text[i]);
    int low = hex_value(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high << 4 | low));
  }
  return out;
}

}  // namespace tutti::store::auth
