// The store's side door (runtime/store/local_socket.h): a client on the store's
// machine comes through the Unix socket named after the store's TCP address, and goes
// over TCP when the setting says off, when the store listens on every address (no
// name), or when another user holds the name.
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/store/local_socket.h"
#include "runtime/store/socket_address.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::soon;
using store_test::StderrCapture;
using store_test::Store;
using tutti::Status;
using tutti::store::Client;
using tutti::store::connect_local;
using tutti::store::listen_local;
using tutti::store::Server;

namespace {

sockaddr_storage loopback(uint16_t port) {
  sockaddr_storage address{};
  std::string why = tutti::store::resolve_socket_address("127.0.0.1", port, false, &address);
  cr_assert(why.empty(), "%s", why.c_str());
  return address;
}

// A wrong secret gets the connection denied, and the server's log line names where it
// came from: how these tests see which door a client took.
std::string peer_of_a_denied_client(Store& store) {
  StderrCapture log;
  store_test::error_of([&] { store.connect_with("not the job's secret"); });
  std::string logged = log.text();
  std::string marker = "denied the connection from ";
  size_t at = logged.find(marker);
  cr_assert(at != std::string::npos, "%s", logged.c_str());
  at += marker.size();
  return logged.substr(at, logged.find(':', at) - at);
}

}  // namespace

Test(local_socket, a_client_on_the_stores_machine_comes_through_it, .timeout = 20) {
  Store store({}, "job secret");
  int fd = connect_local(loopback(store.server->port()));
  cr_assert_geq(fd, 0, "connect_local: %s", std::strerror(-fd));
  close(fd);
  store.client->set("k", "v", soon());
  cr_assert_eq(store.connect()->get("k", soon()), "v");
  cr_assert_eq(peer_of_a_denied_client(store), Store::client_peer());
}

Test(local_socket, off_keeps_both_sides_on_tcp, .timeout = 20) {
  setenv("TUTTI_STORE_UNIX_SOCKET", "off", 1);
  Store store({}, "job secret");
  cr_assert_eq(connect_local(loopback(store.server->port())), -ECONNREFUSED, "the server opened its side door");
  cr_assert_eq(peer_of_a_denied_client(store), "127.0.0.1");
  store.client->set("k", "v", soon());
  cr_assert_eq(store.connect()->get("k", soon()), "v");
}

Test(local_socket, a_bad_setting_is_an_error_that_names_it, .timeout = 20) {
  Store store;
  setenv("TUTTI_STORE_UNIX_SOCKET", "yes", 1);
  auto e = store_test::error_of([&] { store.connect(); });
  cr_assert(e.status() == Status::kInvalidArgument, "%s", e.what());
  cr_assert(contains(e.what(), "TUTTI_STORE_UNIX_SOCKET=\"yes\" is not on or off"), "%s", e.what());
}

Test(local_socket, a_store_on_every_address_has_no_name, .timeout = 20) {
  auto loop = tutti::loop::Loop::create();
  auto server = Server::start(loop, "0.0.0.0", 0, {}, "");
  sockaddr_storage any{};
  tutti::store::resolve_socket_address("0.0.0.0", server->port(), true, &any);
  cr_assert_eq(listen_local(any, 16), -EINVAL);
  cr_assert_eq(connect_local(loopback(server->port())), -ECONNREFUSED);
  auto client_loop = tutti::loop::Loop::create();
  auto client = Client::connect(client_loop, "127.0.0.1", server->port(), soon(), "");
  client->set("k", "v", soon());
  cr_assert_eq(client->get("k", soon()), "v");
}

// Abstract names have no permissions: a listener of another user that took the name
// first must get neither the connection nor the job's requests.
Test(local_socket, a_name_another_user_holds_is_passed_by, .timeout = 20) {
  if (geteuid() != 0) {
    std::printf("local_socket: SKIPPED (making a listener of another user takes root)\n");
    cr_skip_test("making a listener of another user takes root");
  }
  setenv("TUTTI_STORE_UNIX_SOCKET", "off", 1);
  Store store({}, "job secret");  // TCP only: the name is free for the stranger
  setenv("TUTTI_STORE_UNIX_SOCKET", "on", 1);
  const sockaddr_storage address = loopback(store.server->port());

  // ready: the stranger says whether it holds the name; hold: it holds it until the
  // test kills it or, should the test die first, until this end closes.
  int ready[2];
  int hold[2];
  cr_assert_eq(pipe(ready), 0);
  cr_assert_eq(pipe(hold), 0);
  pid_t stranger = fork();
  cr_assert_geq(stranger, 0);
  if (stranger == 0) {
    close(ready[0]);
    close(hold[1]);
    char said = setuid(65534) == 0 && listen_local(address, 16) >= 0 ? 'y' : 'n';
    (void)!write(ready[1], &said, 1);
    (void)!read(hold[0], &said, 1);
    _exit(0);
  }
  close(ready[1]);
  close(hold[0]);
  char said = 'n';
  cr_assert_eq(read(ready[0], &said, 1), 1);
  close(ready[0]);

  int fd = connect_local(address);
  auto client = said == 'y' ? store.connect() : nullptr;
  std::string peer = said == 'y' ? peer_of_a_denied_client(store) : "";
  kill(stranger, SIGKILL);
  waitpid(stranger, nullptr, 0);
  close(hold[1]);
  cr_assert_eq(said, 'y', "the stranger (uid 65534) could not take the name");
  cr_assert_eq(fd, -EPERM, "connect_local took another user's listener (%d)", fd);
  client->set("k", "v", soon());
  cr_assert_eq(store.client->get("k", soon()), "v");
  cr_assert_eq(peer, "127.0.0.1", "the client did not fall back to TCP");
}

// A side door whose queue is full (a connect burst larger than its backlog) sends the
// client to TCP rather than failing it. The door here is the test's own listener that
// never accepts, in front of a store that listens on TCP alone.
Test(local_socket, a_full_queue_sends_the_client_to_tcp, .timeout = 20) {
  setenv("TUTTI_STORE_UNIX_SOCKET", "off", 1);
  Store store({}, "job secret");
  setenv("TUTTI_STORE_UNIX_SOCKET", "on", 1);
  const sockaddr_storage address = loopback(store.server->port());
  int door = listen_local(address, 1);
  cr_assert_geq(door, 0, "listen_local: %s", std::strerror(-door));
  std::vector<int> queued;
  int last = 0;
  while (queued.size() < 64 && (last = connect_local(address)) >= 0) queued.push_back(last);
  cr_assert_eq(last, -EAGAIN, "the queue took %zu connections without filling (%d)", queued.size(), last);
  auto client = store.connect();
  client->set("k", "v", soon());
  cr_assert_eq(store.client->get("k", soon()), "v");
  cr_assert_eq(peer_of_a_denied_client(store), "127.0.0.1", "the client did not fall back to TCP");
  for (int fd : queued) close(fd);
  close(door);
}
