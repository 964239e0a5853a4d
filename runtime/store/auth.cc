#include "runtime/store/auth.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/sha256.h"

namespace tutti::store::auth {
namespace {

constexpr const char* kScheme = "hmac-sha256 ";
constexpr char kHexDigits[] = "0123456789abcdef";

// From the kernel's generator, which blocks only until it was first seeded at boot.
std::string random_bytes(size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t filled = 0; filled < bytes;) {
    ssize_t got = getrandom(out.data() + filled, bytes - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      fail(Status::kInternal, concat("the store handshake cannot draw random bytes from the kernel (getrandom: ",
                                     got < 0 ? strerror(errno) : "no bytes",
                                     "); a seccomp filter or a kernel before 3.17 would refuse it"));
    }
    filled += static_cast<size_t>(got);
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
  static_assert(sha256::kDigestBytes == kProofBytes);
  return sha256::hmac(secret, message);
}

bool same(const std::string& expected, const std::string& got) {
  if (expected.size() != got.size()) return false;
  // Every byte is looked at, whatever the first difference: no early exit to time.
  unsigned char difference = 0;
  for (size_t i = 0; i < expected.size(); ++i) difference |= expected[i] ^ got[i];
  return difference == 0;
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
