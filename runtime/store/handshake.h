// The store's HELLO exchange as two small state machines, one per side, with no I/O:
// server.cc and client.cc carry the frames, these decide what they say. Protocol
// version 1 throughout: authentication rides in HELLO's auth fields (protocol.h).
//
// With a job secret on both sides (TUTTI_SECRET), each proves it knows the secret and
// neither learns anything it could replay:
//   client -> HELLO   auth = token(Nc)                         a fresh client nonce
//   server <- reply   auth = token(Ns)                         a fresh server nonce
//   client -> HELLO   auth = token(HMAC(K, "client" | Nc | Ns))
//   server <- reply   auth = token(HMAC(K, "server" | Nc | Ns))  only once the client's
//                                                               proof matched
// The server proves itself last, so a stranger that connects learns no MAC at all. A
// recorded exchange is useless later (the other side's nonce is fresh), and a proof
// cannot be reflected (the side is in the MAC).
//
// Mixed cases: a server without a secret accepts a client without one, with an empty
// challenge (today's plain HELLO). A server with a secret answers a client without one
// kDenied. A client with a secret refuses a server that does not challenge it: it
// cannot tell that store from a stranger's, and would hand it the job's keys.
#pragma once

#include <optional>
#include <string>

#include "runtime/store/protocol.h"

namespace tutti::store {

class ServerHandshake {
 public:
  enum class Step { kChallenged, kAccepted, kDenied };

  // secret: the job's, or "" to accept clients without one. Kept by reference: the
  // server outlives its connections.
  explicit ServerHandshake(const std::string& secret) : secret_(secret) {}

  // Answers one HELLO (the first, or the second after kChallenged): sets reply's
  // status, message and auth field; its other fields are the caller's.
  Step on_hello(const protocol::Request& hello, protocol::Reply* reply);
  // After kDenied: why, for the server's log line.
  const std::string& why() const { return why_; }

 private:
  Step deny(protocol::Reply* reply, std::string why);

  const std::string& secret_;
  bool challenged_ = false;
  std::string client_nonce_;
  std::string server_nonce_;
  std::string why_;
};

class ClientHandshake {
 public:
  // where: "rendezvous store at HOST:PORT", for messages.
  ClientHandshake(std::string secret, std::string where) : secret_(std::move(secret)), where_(std::move(where)) {}

  // The auth field of the first HELLO: empty without a secret, else a fresh nonce.
  std::string first_auth();
  // Reads an OK reply to the first HELLO. Returns the second HELLO's auth field, or
  // nullopt when the handshake is complete. Throws Error(kDenied) when the store does
  // not challenge a client that has a secret, or challenges one that has none.
  std::optional<std::string> on_first_reply(const protocol::Reply& reply);
  // Checks the store's proof in the OK reply to the second HELLO. Throws
  // Error(kDenied) when it does not match: the store is not this job's.
  void on_second_reply(const protocol::Reply& reply) const;

 private:
  std::string secret_;
  std::string where_;
  std::string client_nonce_;
  std::string server_nonce_;
};

// Where a HELLO reply carries its auth field (a challenge, or the server's proof).
inline const std::string& reply_auth(const protocol::Reply& reply) { return reply.values.at(1); }

}  // namespace tutti::store
