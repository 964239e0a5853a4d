// A connection to the rendezvous store, for user threads. Every call blocks until the
// server answers or the deadline passes, and throws Error on failure. The calling
// thread writes its request on the socket itself; the event loop reads the answers
// (and writes whatever the socket would not take at once). Calls may come from several
// threads at once; a Pipeline sends several requests in one round trip.
//
// Errors, by status: kTimeout (deadline passed; the message names the key(s)),
// kTransport (could not connect, or the connection broke; names the address),
// kPeerLost (the store's host went away mid-call), kInvalidArgument (a limit of the
// server broken, e.g. a value too large), kAborted (after shutdown()), kDenied (the
// job secrets of this process and the store differ; from connect only).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/common/status.h"
#include "runtime/loop/loop.h"
#include "runtime/store/protocol.h"

namespace tutti::store {

// Requests in flight together on one connection: those added between two send()s go
// out in one write, and each is answered on its own, so that a caller can act on one
// answer while another (a parked GET_ANY) still waits at the store. A sequence whose
// steps do not depend on each other's answers then costs one round trip, not one per
// request. Requests are not a transaction: each runs whether or not the others
// succeed. Made by Client::pipeline(); one thread at a time; must not outlive its
// Client. Waiting requests wait until the pipeline's deadline.
class Pipeline {
 public:
  virtual ~Pipeline() = default;

  // Each returns the request's index, for wait() and the readers below.
  virtual size_t set(const std::string& key, const std::string& value) = 0;
  virtual size_t add(const std::string& key, int64_t delta) = 0;
  virtual size_t compare_set(const std::string& key, const std::string& expected, const std::string& desired) = 0;
  virtual size_t multi_get(const std::vector<std::string>& keys) = 0;
  virtual size_t wait_any(const std::vector<std::string>& keys) = 0;
  virtual size_t get_any(const std::vector<std::string>& keys) = 0;
  virtual size_t heartbeat(int64_t timeout_ms, const std::string& activity) = 0;
  virtual size_t member(const std::string& prefix, int64_t rank) = 0;

  // Sends every request added since the last send, in one write.
  virtual void send() = 0;
  // Waits for request i's answer (sending what is unsent first) and throws the error
  // the blocking call would have thrown, if any.
  virtual void wait(size_t i) = 0;
  // wait() for every request, in order: throws the first failure.
  virtual void wait_all() = 0;
  // Waits at most until `until` (and the pipeline's deadline) for request i's answer,
  // sending what is unsent first; true once it is in, for wait() to read. For a long
  // wait that says what it waits for as it goes.
  virtual bool answered_by(size_t i, Deadline until) = 0;

  // Answers, once waited for: ADD's number, WAIT_ANY's and GET_ANY's index; GET_ANY's
  // and COMPARE_SET's value; MULTI_GET's values.
  virtual int64_t number(size_t i) const = 0;
  virtual const std::string& value(size_t i) const = 0;
  virtual const std::vector<std::string>& values(size_t i) const = 0;
};

class Client {
 public:
  // Connects to host:port, retrying refused or unreachable attempts with backoff until
  // the deadline (the server may not be up yet). The final error says the address,
  // how many tries over how long, and the last reason. secret: the job's (TUTTI_SECRET),
  // or "" for none. With one, the client and the store prove to each other that they
  // know it (handshake.h) and a store that cannot is refused with kDenied; without one,
  // only a store without a secret accepts the client. cancelled, if given, is asked
  // every 50 ms while connecting: once it says true, connect gives up with
  // kAborted (an init given up from another thread, comm/init_cancel.h).
  static std::unique_ptr<Client> connect(const std::shared_ptr<loop::Loop>& loop, const std::string& host,
                                         uint16_t port, Deadline deadline, const std::string& secret = {},
                                         const std::function<bool()>& cancelled = {});
  virtual ~Client() = default;

  virtual void set(const std::string& key, const std::string& value, Deadline deadline) = 0;
  // Sets keys[i] to values[i] for every i, in one request: all of them, or none with an
  // error (a limit of the server). keys and values have the same size.
  virtual void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values,
                         Deadline deadline) = 0;
  // Waits until key exists, then returns its value.
  virtual std::string get(const std::string& key, Deadline deadline) = 0;
  // Adds delta to the integer at key (absent counts as 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta, Deadline deadline) = 0;
  // Sets key to desired if its value is expected ("" expects the key to be absent), and
  // returns the value the key holds afterwards either way.
  virtual std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired,
                                  Deadline deadline) = 0;
  // Waits until every key exists.
  virtual void wait_all(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // Waits until at least one key exists; returns the index of one that does.
  virtual size_t wait_any(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // Which of keys exist now; never waits for a key.
  virtual std::vector<bool> check(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // Waits until every key exists, then returns their values in order.
  virtual std::vector<std::string> multi_get(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // Returns whether the key existed.
  virtual bool remove(const std::string& key, Deadline deadline) = 0;
  // Waits until at least one key exists; returns the index of one that does, and its
  // value, in one round trip.
  virtual std::pair<size_t, std::string> get_any(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // Requests to send together (see Pipeline), waiting until deadline at most.
  virtual std::unique_ptr<Pipeline> pipeline(Deadline deadline) = 0;

  // Failure detection (liveness.h). heartbeat(timeout_ms > 0) asks the store to watch
  // this connection and declare it lost when it closes or goes silent for timeout_ms;
  // heartbeat(0) stops the watch, so that closing it afterwards is a clean leave.
  // member() says this connection is rank `rank` of the group under prefix.
  virtual void heartbeat(int64_t timeout_ms, const std::string& activity, Deadline deadline) = 0;
  virtual void member(const std::string& prefix, int64_t rank, Deadline deadline) = 0;
  // The members of the groups under prefix ("": every group), as roster.h encodes them.
  virtual std::vector<std::string> roster(const std::string& prefix, Deadline deadline) = 0;

  // Asynchronous forms for code on the event loop, which must never block it. done
  // gets the outcome: status kOk with the value (a GET's; for a heartbeat the store's
  // wall clock in microseconds since the epoch, or "" from a store that predates it), or the
  // error status and message a blocking call would have thrown. It runs on the loop
  // thread, or on the thread that calls shutdown(), exactly once.
  using Done = std::function<void(Status status, const std::string& message, const std::string& value)>;
  virtual void get_async(const std::string& key, int64_t timeout_ms, Done done) = 0;
  // A SET whose caller need not wait: the connection keeps order, so whatever this
  // client sends later reaches the store after it. done gets its outcome.
  virtual void set_async(const std::string& key, const std::string& value, Done done) = 0;
  virtual void heartbeat_async(int64_t timeout_ms, const std::string& activity, Done done) = 0;
  // A request of any op, sent with an id of this connection's (a relay's rank's, which
  // relay.h carries up; a MULTI_GET of peers' cards): done gets the store's reply as it
  // is, or, with lost set, the failure of this connection (its status and message in
  // the reply). Runs where Done does.
  using Answered = std::function<void(const protocol::Reply& reply, bool lost)>;
  virtual void request_async(protocol::Request request, Answered done) = 0;

  // Fails every pending and later call with `status` and `why`, and closes the
  // connection. Any thread; returns without waiting for the server.
  virtual void shutdown(Status status, const std::string& why) = 0;

  // "host:port", for messages.
  virtual std::string address() const = 0;
};

}  // namespace tutti::store
