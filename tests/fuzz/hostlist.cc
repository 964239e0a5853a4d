// Fuzzes the Slurm hostlist parser (runtime/rendezvous/hostlist.h) with any bytes as
// the list. Properties checked, beyond "no crash, no leak, no undefined behaviour":
//   - failures are tutti::Error(kInvalidArgument) whose message quotes the list;
//   - first_host fails only where expand_hostlist fails too (both parse the whole
//     text), and otherwise is the first host expand_hostlist gives;
//   - the expansion is bounded: at most max_hosts names, none longer than the text,
//     none empty or holding a separator, bracket or space;
//   - the names, joined with commas, are a hostlist that expands to themselves.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/rendezvous/hostlist.h"
#include "tests/fuzz/fuzz_check.h"

using tutti::concat;
using tutti::fuzz::require;
namespace rendezvous = tutti::rendezvous;

namespace {

// Small enough that an expansion costs little time, large enough for real products
// such as r[1-40]n[01-64].
constexpr size_t kMaxHosts = 4096;

void check_error(const tutti::Error& error, std::string_view text, const char* call) {
  require(error.status() == tutti::Status::kInvalidArgument, concat(call, " failed with another status"));
  // what() is a C string: a NUL in the list (no environment variable can hold one)
  // ends the message there, so only the quote up to it can be compared.
  std::string quoted = concat("hostlist \"", text, "\"");
  quoted.resize(std::min(quoted.size(), quoted.find('\0')));
  require(std::string_view(error.what()).find(quoted) == 0,
          concat(call, " gave a message that does not quote the list"));
}

std::optional<std::vector<std::string>> expand(std::string_view text) {
  try {
    return rendezvous::expand_hostlist(text, kMaxHosts);
  } catch (const tutti::Error& error) {
    check_error(error, text, "expand_hostlist");
    return std::nullopt;
  }
}

bool plain_name(const std::string& host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (c == ',' || c == '[' || c == ']' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  std::optional<std::string> first;
  try {
    first = rendezvous::first_host(text);
  } catch (const tutti::Error& error) {
    check_error(error, text, "first_host");
  }
  std::optional<std::vector<std::string>> hosts = expand(text);
  require(first || !hosts, "expand_hostlist accepted a list that first_host refused");
  if (!hosts) return 0;

  require(!hosts->empty() && hosts->size() <= kMaxHosts, concat("expand_hostlist gave ", hosts->size(), " hosts"));
  require((*hosts)[0] == *first,
          concat("first_host gave \"", *first, "\" but expand_hostlist began with \"", (*hosts)[0], "\""));
  std::string joined;
  for (const std::string& host : *hosts) {
    require(plain_name(host), concat("expand_hostlist gave the name \"", host, "\""));
    require(host.size() <= text.size(), concat("expand_hostlist gave \"", host, "\", longer than the list"));
    joined += (joined.empty() ? "" : ",") + host;
  }
  std::optional<std::vector<std::string>> again = expand(joined);
  require(again && *again == *hosts, "the expanded names, joined with commas, do not expand to themselves");
  return 0;
}
