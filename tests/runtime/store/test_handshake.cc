// The HELLO exchange's two state machines (runtime/store/handshake.cc), without
// sockets: matching secrets take two rounds and prove both sides; every mismatch,
// missing secret, replayed or reflected proof ends in kDenied with a message that says
// how to fix it. The same cases over real sockets are in test_server.cc/test_client.cc.
#include <criterion/criterion.h>

#include <optional>
#include <string>

#include "runtime/common/error.h"
#include "runtime/store/auth.h"
#include "runtime/store/handshake.h"
#include "tests/runtime/store/store_test.h"

using tutti::Status;
using tutti::store::ClientHandshake;
using tutti::store::reply_auth;
using tutti::store::ServerHandshake;
namespace protocol = tutti::store::protocol;
namespace auth = tutti::store::auth;
using store_test::contains;
using store_test::error_of;
using Step = ServerHandshake::Step;

namespace {

protocol::Request hello(const std::string& auth_field) {
  protocol::Request r;
  r.op = protocol::Op::kHello;
  r.number = protocol::kVersion;
  r.value = "test:1";
  r.expected = auth_field;
  return r;
}

// What the server puts in every HELLO reply before the handshake fills it in.
protocol::Reply blank_reply() {
  protocol::Reply r;
  r.op = protocol::Op::kHello;
  r.values = {"tutti store test", ""};
  return r;
}

const char* kWhere = "rendezvous store at 127.0.0.1:1";

}  // namespace

Test(handshake, matching_secrets_prove_both_sides_in_two_rounds, .timeout = 10) {
  std::string secret = "s3cret";
  ServerHandshake server(secret);
  ClientHandshake client(secret, kWhere);
  protocol::Reply first = blank_reply();
  cr_assert(server.on_hello(hello(client.first_auth()), &first) == Step::kChallenged);
  cr_assert(first.status == Status::kOk);
  std::optional<std::string> proof = client.on_first_reply(first);
  cr_assert(proof.has_value());
  protocol::Reply second = blank_reply();
  cr_assert(server.on_hello(hello(*proof), &second) == Step::kAccepted);
  cr_assert(second.status == Status::kOk);
  cr_assert(!reply_auth(second).empty());
  client.on_second_reply(second);  // does not throw
}

Test(handshake, no_secret_anywhere_is_one_plain_round, .timeout = 10) {
  std::string none;
  ServerHandshake server(none);
  ClientHandshake client("", kWhere);
  std::string first_auth = client.first_auth();
  cr_assert(first_auth.empty(), "a client without a secret offers no nonce");
  protocol::Reply reply = blank_reply();
  cr_assert(server.on_hello(hello(first_auth), &reply) == Step::kAccepted);
  cr_assert(reply_auth(reply).empty());
  cr_assert_not(client.on_first_reply(reply).has_value());
}

Test(handshake, a_wrong_secret_is_denied_with_how_to_fix_it, .timeout = 10) {
  std::string secret = "right";
  ServerHandshake server(secret);
  ClientHandshake client("wrong", kWhere);
  protocol::Reply first = blank_reply();
  cr_assert(server.on_hello(hello(client.first_auth()), &first) == Step::kChallenged);
  protocol::Reply second = blank_reply();
  cr_assert(server.on_hello(hello(*client.on_first_reply(first)), &second) == Step::kDenied);
  cr_assert(second.status == Status::kDenied);
  cr_assert(contains(second.message, "the job secret did not match") && contains(second.message, "TUTTI_SECRET") &&
                contains(second.message, "tutti launch"),
            "%s", second.message.c_str());
  cr_assert(contains(server.why(), "proof does not match"), "%s", server.why().c_str());
}

Test(handshake, a_client_without_a_secret_is_denied_at_once, .timeout = 10) {
  std::string secret = "right";
  ServerHandshake server(secret);
  protocol::Reply reply = blank_reply();
  cr_assert(server.on_hello(hello(""), &reply) == Step::kDenied);
  cr_assert(reply.status == Status::kDenied);
  cr_assert(contains(reply.message, "the client has none"), "%s", reply.message.c_str());
  // Nor does a HELLO with something that is not a nonce get a challenge.
  ServerHandshake other(secret);
  reply = blank_reply();
  cr_assert(other.on_hello(hello("let me in"), &reply) == Step::kDenied);
}

Test(handshake, a_client_with_a_secret_refuses_a_store_without_one, .timeout = 10) {
  std::string none;
  ServerHandshake server(none);
  ClientHandshake client("mine", kWhere);
  protocol::Reply reply = blank_reply();
  cr_assert(server.on_hello(hello(client.first_auth()), &reply) == Step::kAccepted);
  auto e = error_of([&] { client.on_first_reply(reply); });
  cr_assert(e.status() == Status::kDenied);
  cr_assert(contains(e.what(), kWhere) && contains(e.what(), "does not ask for the job secret"), "%s", e.what());
}

Test(handshake, a_client_without_a_secret_refuses_a_challenge, .timeout = 10) {
  ClientHandshake client("", kWhere);
  protocol::Reply reply = blank_reply();
  reply.values[1] = auth::token(auth::nonce());
  auto e = error_of([&] { client.on_first_reply(reply); });
  cr_assert(e.status() == Status::kDenied && contains(e.what(), "TUTTI_SECRET is not set"), "%s", e.what());
}

Test(handshake, a_store_with_another_secret_fails_to_prove_itself, .timeout = 10) {
  // A fake store that challenges like a real one, then sends a proof made with its own
  // secret (or anything else): the client refuses it.
  ClientHandshake client("ours", kWhere);
  std::string client_nonce = *auth::parse_token(client.first_auth(), auth::kNonceBytes);
  std::string server_nonce = auth::nonce();
  protocol::Reply challenge = blank_reply();
  challenge.values[1] = auth::token(server_nonce);
  cr_assert(client.on_first_reply(challenge).has_value());
  protocol::Reply fake = blank_reply();
  fake.values[1] = auth::token(auth::proof("theirs", auth::Side::kServer, client_nonce, server_nonce));
  auto e = error_of([&] { client.on_second_reply(fake); });
  cr_assert(e.status() == Status::kDenied);
  cr_assert(contains(e.what(), "did not prove it knows the job secret") && contains(e.what(), kWhere), "%s", e.what());
  fake.values[1] = "";
  cr_assert(error_of([&] { client.on_second_reply(fake); }).status() == Status::kDenied);
}

Test(handshake, replayed_and_reflected_proofs_are_denied, .timeout = 10) {
  std::string secret = "k";
  // Record one good exchange.
  ServerHandshake first(secret);
  ClientHandshake client(secret, kWhere);
  protocol::Reply challenge = blank_reply();
  std::string client_auth = client.first_auth();
  first.on_hello(hello(client_auth), &challenge);
  std::string recorded_proof = *client.on_first_reply(challenge);

  // Replayed to a new connection, the server's nonce is a fresh one: denied.
  ServerHandshake replay(secret);
  protocol::Reply reply = blank_reply();
  cr_assert(replay.on_hello(hello(client_auth), &reply) == Step::kChallenged);
  cr_assert_neq(reply_auth(reply), reply_auth(challenge));
  reply = blank_reply();
  cr_assert(replay.on_hello(hello(recorded_proof), &reply) == Step::kDenied);

  // A server-side proof for the right nonces, sent as the client's: denied.
  ServerHandshake reflect(secret);
  std::string nc = auth::nonce();
  reply = blank_reply();
  reflect.on_hello(hello(auth::token(nc)), &reply);
  std::string ns = *auth::parse_token(reply_auth(reply), auth::kNonceBytes);
  reply = blank_reply();
  cr_assert(reflect.on_hello(hello(auth::token(auth::proof(secret, auth::Side::kServer, nc, ns))), &reply) ==
            Step::kDenied);
  // While the client-side proof for those nonces is what it wants.
  ServerHandshake honest(secret);
  reply = blank_reply();
  honest.on_hello(hello(auth::token(nc)), &reply);
  ns = *auth::parse_token(reply_auth(reply), auth::kNonceBytes);
  reply = blank_reply();
  cr_assert(honest.on_hello(hello(auth::token(auth::proof(secret, auth::Side::kClient, nc, ns))), &reply) ==
            Step::kAccepted);
}
