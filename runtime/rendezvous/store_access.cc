#include "runtime/rendezvous/store_access.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <tuple>
#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/rendezvous/file_method.h"
#include "runtime/rendezvous/host_port.h"
#include "runtime/rendezvous/pmix_exchange.h"
#include "runtime/rendezvous/slurm_node.h"
#include "runtime/store/heartbeat_settings.h"
#include "runtime/store/relay.h"
#include "runtime/store/server.h"

namespace tutti::rendezvous {

class HostedStore {
 public:
  HostedStore() = default;
  ~HostedStore() {
    // The relay first: it carries its ranks' last words to the store.
    for (auto* hosted : {&relay_, &store_}) {
      hosted->server.reset();
      if (!hosted->published_file.empty()) std::remove(hosted->published_file.c_str());
    }
  }
  const store::Server& server() const { return *store_.server; }
  void serve(std::unique_ptr<store::Server> server) { store_.server = std::move(server); }
  void serve_relay(std::unique_ptr<store::Server> relay) { relay_.server = std::move(relay); }
  void publish(const std::string& path) { publish_at(&store_, path); }
  void publish_relay(const std::string& path) { publish_at(&relay_, path); }
  const store::Server& relay() const { return *relay_.server; }

 private:
  struct Hosted {
    std::unique_ptr<store::Server> server;
    std::string published_file;
  };
  static void publish_at(Hosted* hosted, const std::string& path) {
    publish_store_address(path, hosted->server->host(), hosted->server->port());
    hosted->published_file = path;
  }

  Hosted store_;
  Hosted relay_;  // this node's, where this process is its local rank 0
};

namespace {

std::shared_ptr<HostedStore> serve_store(const std::shared_ptr<loop::Loop>& loop, const Plan& plan,
                                         const std::string& host) {
  std::unique_ptr<store::Server> server;
  try {
    server = store::Server::start(loop, host, plan.store_port, {}, plan.secret);
  } catch (const Error& error) {
    fail(error.status(),
         concat("tutti_comm_init: rank 0 cannot serve the rendezvous store for ", plan.init_method, ": ", error.what(),
                plan.store_port ? "; pick a free port, or use tutti launch, which picks one itself" : ""));
  }
  auto hosted = std::make_shared<HostedStore>();
  hosted->serve(std::move(server));
  if (!plan.file_path.empty()) hosted->publish(plan.file_path);
  if (plan.secret.empty() && plan.world_size > 1) {  // alone, it has nobody to let in
    const std::string listening = hosted->server().host();
    const bool loopback = listening.rfind("127.", 0) == 0 || listening == "::1" || listening == "localhost";
    log::warn("rank 0 serves the rendezvous store at ", listening, ":", hosted->server().port(),
              " without TUTTI_SECRET, so ", loopback ? "any user of this machine" : "anyone who can reach it",
              " can join this job or read its keys; export the same TUTTI_SECRET to every rank (e.g. "
              "TUTTI_SECRET=$(openssl rand -hex 32)), as tutti launch does by itself");
  }
  return hosted;
}

// Where group `group`'s relay listens, as its leader wrote it in the store at
// host:port: asked once, by each of the group's other nodes, before its relay starts.
std::pair<std::string, uint16_t> find_group_relay(const std::shared_ptr<loop::Loop>& loop, const Plan& plan,
                                                  const std::string& host, uint16_t port, Deadline deadline) {
  auto client = store::Client::connect(loop, host, port, deadline, plan.secret);
  const std::string key = relay_group_key(plan.relay_group);
  const std::string address = client->get(key, deadline);
  std::string relay_host, relay_port;
  std::optional<uint16_t> number;
  if (split_host_port(address, &relay_host, &relay_port)) number = parse_port(relay_port);
  if (!number) {
    fail(Status::kInvalidArgument,
         concat("the store's ", key, " is \"", address, "\", not the HOST:PORT of relay group ", plan.relay_group,
                "'s relay; is another job using the same store?"));
  }
  return {relay_host, *number};
}

// The node's relay, in front of the store at host:port (or of its group's relay),
// published where the node's ranks look for it; a group's leader also says in the
// store where the group's other nodes find its relay.
void serve_relay(const std::shared_ptr<loop::Loop>& loop, const Plan& plan, const std::string& host, uint16_t port,
                 Deadline deadline, HostedStore* hosted) {
  store::RelaySetup setup;
  setup.store_host = host;
  setup.store_port = port;
  setup.secret = plan.secret;
  store::read_heartbeat_settings(&setup.heartbeat_interval_ms, &setup.heartbeat_timeout_ms);
  try {
    if (plan.leads_relay_group) {
      setup.host = plan.relay_host;
    } else if (plan.relay_group >= 0) {
      std::tie(setup.store_host, setup.store_port) = find_group_relay(loop, plan, host, port, deadline);
    }
    hosted->serve_relay(store::start_relay(loop, setup, deadline));
    hosted->publish_relay(plan.relay_file);
    if (plan.leads_relay_group) {
      // Through the relay itself, which holds the store's only connection from here.
      const store::Server& relay = hosted->relay();
      store::Client::connect(loop, relay.host(), relay.port(), deadline, plan.secret)
          ->set(relay_group_key(plan.relay_group), join_host_port(relay.host(), relay.port()), deadline);
    }
  } catch (const Error& error) {
    const std::string group =
        plan.relay_group < 0 ? ""
        : plan.leads_relay_group
            ? concat(", which leads relay group ", plan.relay_group)
            : concat(", in relay group ", plan.relay_group, ", whose relay its first node serves (TUTTI_RELAY_GROUP)");
    fail(error.status(), concat("tutti_comm_init: rank ", plan.rank, " (local rank 0 of node ", plan.node_key, group,
                                ") cannot serve its node's relay to the rendezvous store: ", error.what()));
  }
}

}  // namespace

StoreAccess reach_store(const std::shared_ptr<loop::Loop>& loop, const Plan& plan, Deadline deadline,
                        InitCancel* cancel, const char* api) {
  auto step = [cancel] {
    if (cancel != nullptr) cancel->check();
  };
  std::function<bool()> cancelled = cancel != nullptr ? cancel->predicate() : std::function<bool()>();
  StoreAccess access;
  access.host = plan.store_host_is_slurm_node ? slurm_node_address(plan.store_host, deadline) : plan.store_host;
  access.port = plan.store_port;
  step();
  if (plan.serve_store) {
    access.hosted = serve_store(loop, plan, access.host);
    access.host = access.hosted->server().host();
    access.port = access.hosted->server().port();
  }
  if (plan.store_via_pmix) {
    StoreAddress found = exchange_store_address(plan.serve_store, StoreAddress{access.host, access.port}, deadline);
    access.host = found.host;
    access.port = found.port;
  }
  step();
  if (plan.serve_relay) {
    if (!access.hosted) access.hosted = std::make_shared<HostedStore>();
    serve_relay(loop, plan, access.host, access.port, deadline, access.hosted.get());
  }
  step();
  try {
    if (plan.through_relay) {
      // Its node's relay stands in for the store, for this rank and the splits it makes.
      access.client =
          connect_through_file(loop, plan.relay_file, deadline, plan.secret, &access.host, &access.port, cancelled);
    } else if (!plan.file_path.empty() && !plan.serve_store) {
      access.client =
          connect_through_file(loop, plan.file_path, deadline, plan.secret, &access.host, &access.port, cancelled);
    } else {
      access.client = store::Client::connect(loop, access.host, access.port, deadline, plan.secret, cancelled);
    }
  } catch (const Error& error) {
    // Said as init's failure, by the rank that had it; a cancel says so itself.
    if (error.status() == Status::kAborted) throw;
    fail(error.status(), concat(api, ": ", plan.rank >= 0 ? concat("rank ", plan.rank) : std::string("this process"),
                                " cannot reach the rendezvous store (", plan.init_method, "): ", error.what()));
  }
  return access;
}

}  // namespace tutti::rendezvous
