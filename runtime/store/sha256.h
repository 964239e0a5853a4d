// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the store's handshake (auth.h),
// written here rather than taken from OpenSSL: libcrypto 3 loads its configuration
// and its default provider on the first digest a process asks for, 1.5-2 ms of CPU
// (with its random generator's set-up) that every rank paid in init, and each
// thread's first random bytes cost another 60,000 instructions. The handshake hashes
// a few hundred bytes per connection; a plain implementation does it in microseconds,
// and the library no longer needs libcrypto at all.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tutti::store::sha256 {

constexpr size_t kDigestBytes = 32;
constexpr size_t kBlockBytes = 64;

// A running hash: update() with the message in any pieces, then finish() once.
class Hash {
 public:
  Hash();
  void update(std::string_view bytes);
  // The digest, kDigestBytes bytes. The Hash is spent: update() and finish() no more.
  std::string finish();

 private:
  void compress(const unsigned char* block);

  std::array<uint32_t, 8> state_;
  std::array<unsigned char, kBlockBytes> pending_{};  // a block not yet full
  size_t pending_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string digest(std::string_view bytes);

// HMAC-SHA256 of message under key, kDigestBytes bytes.
std::string hmac(std::string_view key, std::string_view message);

}  // namespace tutti::store::sha256
