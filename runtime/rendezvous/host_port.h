// "host:port" and "[v6]:port", as TUTTI_ADDR and tcp:// write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tutti::rendezvous {

// Splits text into host (without brackets) and the port's text; false when it is not
// of either form, including an IPv6 address without brackets (which colon would start
// the port?). The port is not checked: see parse_port.
bool split_host_port(const std::string& text, std::string* host, std::string* port);

// The inverse of split_host_port: "host:port", or "[host]:port" for an IPv6 address.
std::string join_host_port(const std::string& host, uint16_t port);

// The port in 1..65535, or nullopt for anything else (signs, spaces, trailing text).
std::optional<uint16_t> parse_port(const std::string& text);

}  // namespace tutti::rendezvous
