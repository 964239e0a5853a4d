#include "runtime/store/handshake.h"

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/auth.h"

namespace tutti::store {
namespace {

// What every denied client is told to do; the server's part of the message says why.
constexpr const char* kHowToFix =
    "set TUTTI_SECRET to the same value for every rank and for the process serving the store "
    "(rank 0 or tutti launch), or start the job with tutti launch, which sets it for every rank";

}  // namespace

ServerHandshake::Step ServerHandshake::deny(protocol::Reply* reply, std::string why) {
  why_ = std::move(why);
  reply->status = Status::kDenied;
  reply->message = concat("the job secret did not match: ", why_, "; ", kHowToFix);
  return Step::kDenied;
}

ServerHandshake::Step ServerHandshake::on_hello(const protocol::Request& hello, protocol::Reply* reply) {
  reply->status = Status::kOk;
  reply->values.resize(2);
  if (!challenged_) {
    if (secret_.empty()) {
      reply->values[1] = "";
      return Step::kAccepted;
    }
    if (hello.expected.empty()) {
      return deny(reply, "this store requires the job secret (TUTTI_SECRET) and the client has none");
    }
    auto nonce = auth::parse_token(hello.expected, auth::kNonceBytes);
    if (!nonce) return deny(reply, "the client's HELLO offers no hmac-sha256 nonce");
    client_nonce_ = *nonce;
    server_nonce_ = auth::nonce();
    challenged_ = true;
    reply->values[1] = auth::token(server_nonce_);
    return Step::kChallenged;
  }
  auto got = auth::parse_token(hello.expected, auth::kProofBytes);
  std::string expected = auth::proof(secret_, auth::Side::kClient, client_nonce_, server_nonce_);
  if (!got || !auth::same(expected, *got)) {
    return deny(reply, "the client's proof does not match this store's secret (TUTTI_SECRET differs)");
  }
  reply->values[1] = auth::token(auth::proof(secret_, auth::Side::kServer, client_nonce_, server_nonce_));
  return Step::kAccepted;
}

std::string ClientHandshake::first_auth() {
  if (secret_.empty()) return "";
  client_nonce_ = auth::nonce();
  return auth::token(client_nonce_);
}

std::optional<std::string> ClientHandshake::on_first_reply(const protocol::Reply& reply) {
  const std::string& challenge = reply_auth(reply);
  if (secret_.empty()) {
    if (challenge.empty()) return std::nullopt;
    fail(Status::kDenied, concat(where_, " requires the job secret and this process has none (TUTTI_SECRET is not ",
                                 "set); ", kHowToFix));
  }
  if (challenge.empty()) {
    fail(Status::kDenied,
         concat(where_, " does not ask for the job secret, so this process cannot tell it from a stranger's store ",
                "and will not use it (TUTTI_SECRET is set here but not where the store runs); ", kHowToFix,
                ", or unset TUTTI_SECRET on every rank"));
  }
  auto nonce = auth::parse_token(challenge, auth::kNonceBytes);
  if (!nonce) {
    fail(Status::kDenied, concat(where_, " sent a challenge this client does not understand (not an hmac-sha256 ",
                                 "nonce); is it a tutti store of this release?"));
  }
  server_nonce_ = *nonce;
  return auth::token(auth::proof(secret_, auth::Side::kClient, client_nonce_, server_nonce_));
}

void ClientHandshake::on_second_reply(const protocol::Reply& reply) const {
  auto got = auth::parse_token(reply_auth(reply), auth::kProofBytes);
  std::string expected = auth::proof(secret_, auth::Side::kServer, client_nonce_, server_nonce_);
  if (!got || !auth::same(expected, *got)) {
    fail(Status::kDenied,
         concat(where_, " did not prove it knows the job secret: it is not this job's store (another job's, or a ",
                "stranger's at the address); check TUTTI_ADDR or the init method, and ", kHowToFix));
  }
}

}  // namespace tutti::store
