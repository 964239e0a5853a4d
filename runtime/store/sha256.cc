#include "runtime/store/sha256.h"

#include <string.h>

#include <algorithm>

namespace tutti::store::sha256 {
namespace {

// FIPS 180-4, 4.2.2: the first 32 bits of the fractional parts of the cube roots of
// the first 64 primes.
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// 5.3.3: the first 32 bits of the fractional parts of the square roots of the first
// 8 primes.
constexpr std::array<uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                              0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

uint32_t load_big_endian(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

void store_big_endian(uint64_t value, unsigned char* p, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, value >>= 8) p[i] = static_cast<unsigned char>(value);
}

}  // namespace

Hash::Hash() : state_(kInitial) {}

// 6.2.2: one 64-byte block into the state.
void Hash::compress(const unsigned char* block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = load_big_endian(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Hash::update(std::string_view bytes) {
  if (bytes.empty()) return;  // an empty view's data() may be null, which memcpy may not take
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t left = bytes.size();
  total_bytes_ += left;
  if (pending_bytes_ > 0) {
    size_t take = std::min(left, kBlockBytes - pending_bytes_);
    memcpy(pending_.data() + pending_bytes_, p, take);
    pending_bytes_ += take;
    p += take;
    left -= take;
    if (pending_bytes_ < kBlockBytes) return;
    compress(pending_.data());
    pending_bytes_ = 0;
  }
  for (; left >= kBlockBytes; p += kBlockBytes, left -= kBlockBytes) compress(p);
  memcpy(pending_.data(), p, left);
  pending_bytes_ = left;
}

// 5.1.1: a 1 bit, zeros up to 8 bytes short of a block's end, then the message's
// length in bits.
std::string Hash::finish() {
  unsigned char tail[2 * kBlockBytes] = {0x80};
  size_t tail_bytes = (pending_bytes_ < kBlockBytes - 8 ? kBlockBytes : 2 * kBlockBytes) - pending_bytes_;
  store_big_endian(total_bytes_ * 8, tail + tail_bytes - 8, 8);
  update(std::string_view(reinterpret_cast<const char*>(tail), tail_bytes));
  std::string out(kDigestBytes, '\0');
  for (size_t i = 0; i < state_.size(); ++i)
    store_big_endian(state_[i], reinterpret_cast<unsigned char*>(out.data()) + 4 * i, 4);
  return out;
}

std::string digest(std::string_view bytes) {
  Hash hash;
  hash.update(bytes);
  return hash.finish();
}

std::string hmac(std::string_view key, std::string_view message) {
  // RFC 2104: a key longer than a block is hashed first; either way it is zero-padded
  // to a block and XORed with the inner and the outer pad.
  unsigned char pad[kBlockBytes] = {};
  std::string hashed_key;
  if (key.size() > kBlockBytes) key = hashed_key = digest(key);
  memcpy(pad, key.data(), key.size());
  for (unsigned char& byte : pad) byte ^= 0x36;
  Hash inner;
  inner.update(std::string_view(reinterpret_cast<const char*>(pad), sizeof(pad)));
  inner.update(message);
  std::string inner_digest = inner.finish();
  for (unsigned char& byte : pad) byte ^= 0x36 ^ 0x5c;
  Hash outer;
  outer.update(std::string_view(reinterpret_cast<const char*>(pad), sizeof(pad)));
  outer.update(inner_digest);
  // The pads and the hashed key are the secret in another form: not left in freed memory.
  explicit_bzero(pad, sizeof(pad));
  explicit_bzero(hashed_key.data(), hashed_key.size());
  return outer.finish();
}

}  // namespace tutti::store::sha256
