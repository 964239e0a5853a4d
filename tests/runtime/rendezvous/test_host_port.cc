// runtime/rendezvous/host_port.cc: the one parser of "host:port" for TUTTI_ADDR and tcp://, and
// its inverse.
#include <criterion/criterion.h>

#include <string>

#include "runtime/rendezvous/host_port.h"

using tutti::rendezvous::join_host_port;
using tutti::rendezvous::parse_port;
using tutti::rendezvous::split_host_port;

Test(host_port, splits_names_ipv4_and_bracketed_ipv6) {
  std::string host, port;
  cr_assert(split_host_port("node01:29500", &host, &port));
  cr_expect(host == "node01" && port == "29500");
  cr_assert(split_host_port("127.0.0.1:1", &host, &port));
  cr_expect(host == "127.0.0.1" && port == "1");
  cr_assert(split_host_port("[::1]:29500", &host, &port));
  cr_expect(host == "::1" && port == "29500");
}

Test(host_port, refuses_what_has_no_clear_port) {
  std::string host, port;
  cr_expect_not(split_host_port("node01", &host, &port));
  cr_expect_not(split_host_port(":29500", &host, &port));
  cr_expect_not(split_host_port("::1:29500", &host, &port), "an unbracketed IPv6 address is ambiguous");
  cr_expect_not(split_host_port("[::1]29500", &host, &port));
  cr_expect_not(split_host_port("[]:29500", &host, &port));
  // An empty port splits off, and parse_port is what refuses it.
  cr_assert(split_host_port("[::1]:", &host, &port));
  cr_expect(port.empty() && !parse_port(port).has_value());
}

Test(host_port, ports_are_plain_numbers_in_range) {
  cr_expect(parse_port("1") == 1);
  cr_expect(parse_port("65535") == 65535);
  const char* bad[] = {"", "0", "65536", "123456", "+80", " 80", "80 ", "8o", "-1"};
  for (const char* text : bad) cr_expect_not(parse_port(text).has_value(), "\"%s\" is not a port", text);
}

Test(host_port, join_is_the_inverse_of_split) {
  cr_expect_eq(join_host_port("node01", 29500), "node01:29500");
  cr_expect_eq(join_host_port("10.0.0.1", 1), "10.0.0.1:1");
  cr_expect_eq(join_host_port("::1", 65535), "[::1]:65535");
  std::string host, port;
  cr_assert(split_host_port(join_host_port("fe80::2", 80), &host, &port));
  cr_expect_eq(host, "fe80::2");
  cr_expect_eq(port, "80");
}
