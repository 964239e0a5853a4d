// The handshake's cryptography (runtime/store/auth.cc): proofs are HMAC-SHA256 of a
// fixed layout (pinned by a known answer computed with Python's hmac module), differ by
// side, nonce and secret, and tokens read back only in their exact form.
#include <criterion/criterion.h>

#include <set>
#include <string>

#include "runtime/store/auth.h"

namespace auth = tutti::store::auth;

namespace {

std::string bytes_from(int first) {
  std::string out;
  for (int i = 0; i < 32; ++i) out.push_back(static_cast<char>(first + i));
  return out;
}

}  // namespace

Test(auth, proofs_match_a_known_answer, .timeout = 10) {
  // python3: hmac.new(b"job secret", b"tutti-store client proof" + bytes(range(32)) +
  //          bytes(range(32, 64)), hashlib.sha256).hexdigest()
  std::string client_nonce = bytes_from(0);
  std::string server_nonce = bytes_from(32);
  cr_assert_eq(auth::token(auth::proof("job secret", auth::Side::kClient, client_nonce, server_nonce)),
               "hmac-sha256 c61c9511a54cf8171709eb74f163dfa1f50ae4e4a3f5857df905c7e7425a1a43");
  cr_assert_eq(auth::token(auth::proof("job secret", auth::Side::kServer, client_nonce, server_nonce)),
               "hmac-sha256 2d5e10446800f44f3d88e4d357c44183df73c57999fe409f6dffcad6fc5aadf8");
}

Test(auth, proofs_differ_by_side_nonce_and_secret, .timeout = 10) {
  std::string a = bytes_from(0);
  std::string b = bytes_from(32);
  std::set<std::string> proofs = {
      auth::proof("s", auth::Side::kClient, a, b),
      auth::proof("s", auth::Side::kServer, a, b),
      auth::proof("s", auth::Side::kClient, b, a),
      auth::proof("t", auth::Side::kClient, a, b),
  };
  cr_assert_eq(proofs.size(), 4u, "a proof repeated across side, nonce order or secret");
  for (const auto& p : proofs) cr_assert_eq(p.size(), auth::kProofBytes);
}

Test(auth, nonces_and_secrets_are_fresh, .timeout = 10) {
  std::set<std::string> nonces;
  for (int i = 0; i < 100; ++i) {
    std::string n = auth::nonce();
    cr_assert_eq(n.size(), auth::kNonceBytes);
    nonces.insert(n);
  }
  cr_assert_eq(nonces.size(), 100u);
  std::string secret = auth::random_secret_hex();
  cr_assert_eq(secret.size(), 64u);
  cr_assert(secret.find_first_not_of("0123456789abcdef") == std::string::npos, "%s", secret.c_str());
  cr_assert_neq(secret, auth::random_secret_hex());
}

Test(auth, same_compares_whole_strings, .timeout = 10) {
  std::string p = bytes_from(0);
  cr_assert(auth::same(p, p));
  std::string last = p;
  last.back() ^= 1;
  cr_assert_not(auth::same(p, last));
  cr_assert_not(auth::same(p, p.substr(0, 31)));
  cr_assert_not(auth::same(p, ""));
}

Test(auth, tokens_read_back_only_in_their_exact_form, .timeout = 10) {
  std::string n = bytes_from(200);
  std::string t = auth::token(n);
  cr_assert_eq(auth::parse_token(t, 32).value(), n);
  cr_assert_not(auth::parse_token(t, 16).has_value(), "wrong length");
  cr_assert_not(auth::parse_token(t.substr(0, t.size() - 2), 32).has_value(), "short");
  std::string upper = t;
  upper.back() = 'F';
  cr_assert_not(auth::parse_token(upper, 32).has_value(), "upper-case hex");
  std::string scheme = t;
  scheme[0] = 'x';
  cr_assert_not(auth::parse_token(scheme, 32).has_value(), "another scheme");
  cr_assert_not(auth::parse_token("", 32).has_value());
}
