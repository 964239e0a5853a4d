#include "runtime/rendezvous/host_port.h"

#include "runtime/common/concat.h"

namespace tutti::rendezvous {

bool split_host_port(const std::string& text, std::string* host, std::string* port) {
  size_t colon;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close == 1 || close + 1 >= text.size() || text[close + 1] != ':') return false;
    *host = text.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = text.find(':');
    if (colon == std::string::npos || colon == 0 || text.find(':', colon + 1) != std::string::npos) return false;
    *host = text.substr(0, colon);
  }
  *port = text.substr(colon + 1);
  return true;
}

std::string join_host_port(const std::string& host, uint16_t port) {
  return host.find(':') == std::string::npos ? concat(host, ":", port) : concat("[", host, "]:", port);
}

std::optional<uint16_t> parse_port(const std::string& text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value < 1 || value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

}  // namespace tutti::rendezvous
