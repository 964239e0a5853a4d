// SHA-256 and HMAC-SHA256 (runtime/store/sha256.cc) against known answers: FIPS 180-4's
// examples, RFC 4231's HMAC cases, and Python's hashlib and hmac for the rest (the
// expression beside each).
#include <criterion/criterion.h>

#include <string>

#include "runtime/store/sha256.h"

namespace sha256 = tutti::store::sha256;

namespace {

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// bytes(i * 7 & 0xff for i in range(n))
std::string pattern(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<char>(i * 7 & 0xff));
  return out;
}

}  // namespace

Test(sha256, digests_match_the_standards_examples, .timeout = 10) {
  cr_assert_eq(hex(sha256::digest("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  sha256::Hash nothing;
  nothing.update(std::string_view());  // data() null: hashed as nothing, not read
  cr_assert_eq(hex(nothing.finish()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  cr_assert_eq(hex(sha256::digest("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  cr_assert_eq(hex(sha256::digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  cr_assert_eq(hex(sha256::digest(std::string(1000000, 'a'))),
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Every length from 0 to 200 bytes, so every way the padding falls (one block or two,
// the length field's 8 bytes at a block's end or past it): one known answer for the
// digest of all their digests. python3: sha256(b"".join(sha256(pattern(n)).digest()
// for n in range(201))).hexdigest()
Test(sha256, every_padding_case_up_to_three_blocks, .timeout = 10) {
  std::string digests;
  for (size_t n = 0; n <= 200; ++n) digests += sha256::digest(pattern(n));
  cr_assert_eq(hex(sha256::digest(digests)), "c43614ca86d050b81500ab839e2b7e83381ef396e722c27d3e537ab57268e893");
}

Test(sha256, pieces_of_any_size_hash_as_the_whole, .timeout = 10) {
  std::string message = pattern(1000);
  std::string whole = sha256::digest(message);
  for (size_t piece : {1, 3, 55, 63, 64, 65, 127, 999}) {
    sha256::Hash hash;
    for (size_t at = 0; at < message.size(); at += piece) hash.update(std::string_view(message).substr(at, piece));
    cr_assert_eq(hex(hash.finish()), hex(whole), "in pieces of %zu bytes", piece);
  }
}

Test(sha256, hmac_matches_rfc_4231, .timeout = 10) {
  // Test case 1: a 20-byte key.
  cr_assert_eq(hex(sha256::hmac(std::string(20, '\x0b'), "Hi There")),
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: a key shorter than the MAC.
  cr_assert_eq(hex(sha256::hmac("Jefe", "what do ya want for nothing?")),
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than a block is hashed first.
  cr_assert_eq(hex(sha256::hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // A key of exactly a block is used as it is. python3: hmac.new(b"\xaa" * 64,
  // b"exactly a block of key", "sha256").hexdigest()
  cr_assert_eq(hex(sha256::hmac(std::string(64, '\xaa'), "exactly a block of key")),
               "d89ee2cf645fc1a6c33993ec7e7407e3b09ce1397da70e224c7db7daf6b40e52");
}
