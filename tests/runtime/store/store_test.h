// What the store's tests share: a server with a client, a bounded deadline, a
// stopwatch, a substring check, and catching the tutti::Error a call must throw.
#pragma once

#include <criterion/criterion.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/loop/loop.h"
#include "runtime/store/client.h"
#include "runtime/store/server.h"
#include "tests/support/processes.h"

namespace store_test {

using Clock = std::chrono::steady_clock;

// Long enough for any store call here, scaled by TUTTI_TEST_TIMEOUT_MULTIPLIER.
inline tutti::Deadline soon() { return tutti::Deadline::after_ms(tt_timeout_ms(10000)); }

inline int64_t ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A server and a client on loops of their own, as rank 0 and another rank would have.
struct Store {
  explicit Store(tutti::store::ServerLimits limits = {}) {
    server = tutti::store::Server::start(server_loop, "127.0.0.1", 0, limits);
    client = connect();
  }
  std::unique_ptr<tutti::store::Client> connect() {
    return tutti::store::Client::connect(client_loop, "127.0.0.1", server->port(), soon());
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server->port()); }

  std::shared_ptr<tutti::loop::Loop> server_loop = std::make_shared<tutti::loop::Loop>();
  std::shared_ptr<tutti::loop::Loop> client_loop = std::make_shared<tutti::loop::Loop>();
  std::unique_ptr<tutti::store::Server> server;
  std::unique_ptr<tutti::store::Client> client;
};

// Runs fn, which must throw tutti::Error, and returns that error.
template <typename Fn>
tutti::Error error_of(Fn&& fn) {
  try {
    fn();
  } catch (const tutti::Error& e) {
    return e;
  }
  cr_assert_fail("no tutti::Error was thrown");
  return tutti::Error(tutti::Status::kOk, "");
}

}  // namespace store_test
