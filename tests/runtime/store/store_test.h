// What the store's tests share: a server with a client, a bounded deadline, a
// stopwatch, a substring check, polling until a condition holds, catching the tutti::Error a call must throw, and the
// log lines the server writes.
#pragma once

#include <criterion/criterion.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

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
// With a secret, the server requires it and connect() presents it.
struct Store {
  explicit Store(tutti::store::ServerLimits limits = {}, std::string job_secret = {}) : secret(job_secret) {
    server = tutti::store::Server::start(server_loop, "127.0.0.1", 0, limits, secret);
    client = connect();
  }
  std::unique_ptr<tutti::store::Client> connect() { return connect_with(secret); }
  std::unique_ptr<tutti::store::Client> connect_with(const std::string& client_secret) {
    return tutti::store::Client::connect(client_loop, "127.0.0.1", server->port(), soon(), client_secret);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server->port()); }
  // How the server names a client of this process: it comes through the store's Unix
  // socket (store/local_socket.h), as every client on the store's machine does.
  static std::string client_peer() { return "local pid " + std::to_string(getpid()); }

  std::string secret;
  std::shared_ptr<tutti::loop::Loop> server_loop = tutti::loop::Loop::create();
  std::shared_ptr<tutti::loop::Loop> client_loop = tutti::loop::Loop::create();
  std::unique_ptr<tutti::store::Server> server;
  std::unique_ptr<tutti::store::Client> client;
};

// Sends this process's stderr (where log lines go, one write each) to a file while it
// lives, so that a test can read what the server logged. A file, not a pipe: a pipe
// nobody drains would block the server's loop once 64 KiB of lines were written.
class StderrCapture {
 public:
  StderrCapture() {
    char path[] = "/tmp/tutti-test-stderr-XXXXXX";
    fd_ = mkstemp(path);
    cr_assert_geq(fd_, 0, "cannot create a file for stderr");
    unlink(path);
    saved_ = dup(STDERR_FILENO);
    dup2(fd_, STDERR_FILENO);
  }
  ~StderrCapture() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    close(fd_);
  }
  std::string text() const {
    std::string out;
    char buffer[65536];
    for (off_t at = 0;;) {
      ssize_t n = pread(fd_, buffer, sizeof(buffer), at);
      if (n <= 0) break;
      out.append(buffer, static_cast<size_t>(n));
      at += n;
    }
    return out;
  }

 private:
  int fd_ = -1;
  int saved_ = -1;
};

// How many times part occurs in text.
inline int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// Polls cond every few ms until it holds or ms (scaled) pass.
template <typename Cond>
bool eventually(Cond cond, int ms) {
  auto until = Clock::now() + std::chrono::milliseconds(tt_timeout_ms(ms));
  while (Clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

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
