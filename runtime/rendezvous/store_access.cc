#include "runtime/rendezvous/store_access.h"

#include <cstdio>
#include <functional>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/rendezvous/file_method.h"
#include "runtime/rendezvous/pmix_exchange.h"
#include "runtime/rendezvous/slurm_node.h"
#include "runtime/store/server.h"

namespace tutti::rendezvous {

class HostedStore {
 public:
  explicit HostedStore(std::unique_ptr<store::Server> server) : server_(std::move(server)) {}
  ~HostedStore() {
    server_.reset();
    if (!published_file_.empty()) std::remove(published_file_.c_str());
  }
  const store::Server& server() const { return *server_; }
  void publish(const std::string& path) {
    publish_store_address(path, server_->host(), server_->port());
    published_file_ = path;
  }

 private:
  std::unique_ptr<store::Server> server_;
  std::string published_file_;
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
  auto hosted = std::make_shared<HostedStore>(std::move(server));
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
  try {
    if (!plan.file_path.empty() && !plan.serve_store) {
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
