// Slurm hostlist expansion: the forms Slurm writes, and a clear error, with the column,
// for each way a list can be wrong.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/rendezvous/hostlist.h"

using tutti::rendezvous::expand_hostlist;
using tutti::rendezvous::first_host;

namespace {

std::string joined(const std::vector<std::string>& hosts) {
  std::string out;
  for (const std::string& host : hosts) out += (out.empty() ? "" : " ") + host;
  return out;
}

void expect_hosts(const char* text, const char* expected) {
  std::string got = joined(expand_hostlist(text));
  cr_assert(got == expected, "expand_hostlist(\"%s\") gave \"%s\", expected \"%s\"", text, got.c_str(), expected);
}

// The message of the error that expanding text throws; fails the test when none is thrown.
std::string error_of(const char* text, size_t max_hosts = 1u << 20) {
  try {
    expand_hostlist(text, max_hosts);
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kInvalidArgument, "wrong status for \"%s\"", text);
    return error.what();
  }
  cr_assert_fail("expand_hostlist(\"%s\") did not fail", text);
  return "";
}

void expect_error(const char* text, const char* fault, int column) {
  std::string message = error_of(text);
  std::string quoted = std::string("hostlist \"") + text + "\" is not valid: ";
  std::string where = std::string(fault) + " at column " + std::to_string(column) + ";";
  cr_assert(message.find(quoted) == 0, "message does not quote the list: %s", message.c_str());
  cr_assert(message.find(where) != std::string::npos, "message lacks \"%s\": %s", where.c_str(), message.c_str());
}

}  // namespace

Test(hostlist, plain_names_and_ranges, .timeout = 10) {
  expect_hosts("gpu[01-03,07],cpu5", "gpu01 gpu02 gpu03 gpu07 cpu5");
  expect_hosts("node1", "node1");
  expect_hosts("a,b,c", "a b c");
  expect_hosts("n[5]", "n5");
  expect_hosts("[1-3]", "1 2 3");
  expect_hosts("n[1-3,2]", "n1 n2 n3 n2");
}

Test(hostlist, zero_padding_follows_the_low_bound, .timeout = 10) {
  expect_hosts("n[08-10]", "n08 n09 n10");
  expect_hosts("n[8-10]", "n8 n9 n10");
  expect_hosts("n[001-002]", "n001 n002");
  expect_hosts("n[0]", "n0");
}

Test(hostlist, several_brackets_form_a_product_in_order, .timeout = 10) {
  expect_hosts("r[1-2]n[01-02]", "r1n01 r1n02 r2n01 r2n02");
  expect_hosts("r[1,3]n[1-2]x[7]", "r1n1x7 r1n2x7 r3n1x7 r3n2x7");
  expect_hosts("r[1-2]n[01-02],c1", "r1n01 r1n02 r2n01 r2n02 c1");
}

Test(hostlist, suffix_after_a_bracket, .timeout = 10) {
  expect_hosts("n[1-2]-ib", "n1-ib n2-ib");
  expect_hosts("n[1-2]-ib.cluster,login", "n1-ib.cluster n2-ib.cluster login");
}

Test(hostlist, exact_message_for_an_unbalanced_bracket, .timeout = 10) {
  std::string message = error_of("gpu[01-03");
  cr_assert_str_eq(message.c_str(),
                   "hostlist \"gpu[01-03\" is not valid: unbalanced '[' at column 4; expected a list such as "
                   "gpu[01-03,07],cpu5");
}

Test(hostlist, unbalanced_brackets, .timeout = 10) {
  expect_error("gpu[01-03", "unbalanced '['", 4);
  expect_error("gpu[01-", "unbalanced '['", 4);
  expect_error("gpu[", "unbalanced '['", 4);
  expect_error("gpu01]", "unbalanced ']'", 6);
  expect_error("a,n[1-2]]", "unbalanced ']'", 9);
  expect_error("n[1[2]]", "'[' inside brackets", 4);
}

Test(hostlist, bad_ranges, .timeout = 10) {
  expect_error("n[3-1]", "a reversed range 3-1", 3);
  expect_error("n[1-2,9-08]", "a reversed range 9-08", 7);
  expect_error("n[a-b]", "a range that is not numeric ('a')", 3);
  expect_error("n[1-b]", "a range that is not numeric ('b')", 5);
  expect_error("n[1-2x]", "a range that is not numeric ('x')", 6);
  expect_error("n[]", "an empty range", 3);
  expect_error("n[1,]", "an empty range", 5);
  expect_error("n[12345678901234567890]", "a number longer than 18 digits", 3);
}

Test(hostlist, empty_names, .timeout = 10) {
  expect_error("a,,b", "an empty name", 3);
  expect_error(",a", "an empty name", 1);
  expect_error("a,", "an empty name", 3);
  expect_error("", "an empty name", 1);
}

Test(hostlist, whitespace_is_refused, .timeout = 10) {
  expect_error("a, b", "whitespace or a control character", 3);
  expect_error("a\n", "whitespace or a control character", 2);
}

Test(hostlist, too_many_hosts_is_refused_before_expanding, .timeout = 10) {
  // Each of these would take gigabytes, or overflow a count, if it were expanded first.
  std::string message = error_of("n[0-999999999]");
  cr_assert(message.find("more than 1048576 hosts") != std::string::npos, "%s", message.c_str());
  cr_assert(message.find("column 1") != std::string::npos, "%s", message.c_str());
  message = error_of("a,n[0-999999999999999999]m[0-999999999999999999]k[0-999999999999999999]");
  cr_assert(message.find("column 3") != std::string::npos, "%s", message.c_str());

  cr_assert(expand_hostlist("n[1-3]", 3).size() == 3);
  cr_assert(error_of("n[1-4]", 3).find("more than 3 hosts") != std::string::npos);
  cr_assert(error_of("a,b,c,d", 3).find("by the name at column 7") != std::string::npos);
  cr_assert(error_of("r[1-2]n[1-2]", 3).find("more than 3 hosts") != std::string::npos);
}

Test(hostlist, first_host_takes_the_first_name_only, .timeout = 10) {
  // Each name is held in a variable: cr_assert_str_eq keeps the pointer it is given
  // beyond the statement that made it, where a temporary's c_str() has gone.
  std::string host = first_host("gpu[01-03,07],cpu5");
  cr_assert_str_eq(host.c_str(), "gpu01");
  host = first_host("r[2-3]n[07-08]-ib");
  cr_assert_str_eq(host.c_str(), "r2n07-ib");
  host = first_host("login,n[1-2]");
  cr_assert_str_eq(host.c_str(), "login");
  // Far more names than expand_hostlist would allow: first_host must not expand them.
  host = first_host("n[000000000-999999999],m[0-999999999]");
  cr_assert_str_eq(host.c_str(), "n000000000");
}

Test(hostlist, first_host_reports_faults_like_expand, .timeout = 10) {
  try {
    first_host("gpu[01-03");
    cr_assert_fail("first_host accepted an unbalanced bracket");
  } catch (const tutti::Error& error) {
    cr_assert(std::string(error.what()).find("unbalanced '[' at column 4") != std::string::npos);
  }
  try {
    first_host("a,,b");
    cr_assert_fail("first_host accepted an empty name");
  } catch (const tutti::Error& error) {
    cr_assert(std::string(error.what()).find("an empty name at column 3") != std::string::npos);
  }
}
