// The cryptography of the store's handshake, and nothing else: fresh random nonces,
// HMAC-SHA256 proofs bound to a direction and to both nonces, and a comparison that
// takes the same time wherever the bytes differ. The kernel gives the random bytes
// (getrandom), sha256.h the MAC.
// handshake.h puts these together into the exchange itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace tutti::store::auth {

// Nonces are as long as the MAC: 256 bits, never reused by chance.
constexpr size_t kNonceBytes = 32;
constexpr size_t kProofBytes = 32;

// Which side a proof speaks for. The label goes into the MAC, so that a proof one side
// sent can never be reflected back as the other side's.
enum class Side { kClient, kServer };

// kNonceBytes from the kernel's generator (getrandom). Throws
// Error(kInternal) when it has none to give.
std::string nonce();

// HMAC-SHA256 under secret of "tutti-store <side> proof" | client_nonce | server_nonce.
// The nonces have a fixed length, so the concatenation is unambiguous.
std::string proof(const std::string& secret, Side side, const std::string& client_nonce,
                  const std::string& server_nonce);

// Whether got is expected, in time that depends only on their lengths, so that a
// stranger cannot find a proof byte by byte by timing the answers.
bool same(const std::string& expected, const std::string& got);

// A fresh job secret: `bytes` random bytes as lower-case hex (what tutti launch sets
// TUTTI_SECRET to). Throws Error(kInternal) when the generator fails.
std::string random_secret_hex(size_t bytes = 32);

// Handshake fields carry nonces and proofs as "hmac-sha256 <64 hex digits>": readable
// in a packet capture, and a later scheme can take another name without a version bump.
std::string token(const std::string& bytes);
// The bytes of a token of `bytes` bytes; nullopt for anything else.
std::optional<std::string> parse_token(const std::string& text, size_t bytes);

}  // namespace tutti::store::auth
