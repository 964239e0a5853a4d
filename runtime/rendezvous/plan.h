// Turns what a program asked for (config fields, the init method) and what its
// launcher said (the environment) into a plan: this rank's place, where the store is,
// and whether this rank serves it. Pure: no I/O but reading the environment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/rendezvous/launch_env.h"

namespace tutti::rendezvous {

struct Request {
  int rank = -1;            // -1: from the environment
  int world_size = -1;      // -1: from the environment
  std::string init_method;  // "": TUTTI_INIT_METHOD, else env://
};

struct Plan {
  std::string init_method;  // as resolved, for messages
  int rank = -1;
  int world_size = -1;
  // From the launcher when it says; computed at the meeting otherwise (-1 here).
  int local_rank = -1;
  int local_size = -1;
  int node_rank = -1;
  // What tells nodes apart: the launcher's node id where it gives one (Slurm's
  // emulated nodes share a hostname), the hostname otherwise.
  std::string node_key;
  std::string launcher;                // "tutti", "slurm", ... or "config"
  std::vector<std::string> variables;  // "NAME=value" read, for messages
  std::string store_host;
  bool store_host_is_slurm_node = false;  // see LaunchEnv
  // The store's address travels through PMIx (pmix_exchange.h): the serving rank
  // listens at store_host and store_port (0: any free port) and publishes where.
  bool store_via_pmix = false;
  uint16_t store_port = 0;             // 0 with file://: rank 0 picks one and publishes it
  bool serve_store = false;            // this rank starts the store
  std::string store_owner = "rank 0";  // who serves it, for messages: "rank 0" or "tutti launch"
  std::string file_path;               // file:// only
  // Node relays (store/relay.h, TUTTI_RELAY): this rank reaches the store through its
  // node's relay, which the node's local rank 0 serves (serve_relay) and whose address
  // it writes to relay_file, as file:// writes the store's.
  bool through_relay = false;
  bool serve_relay = false;
  std::string relay_file;
  // Relays of relays (TUTTI_RELAY_GROUP): in a job of many nodes, the nodes are taken
  // in groups by node_rank, and the first node of each serves the group's relay, which
  // stands in front of the store for the other nodes' relays, so that the store holds
  // a connection, and a heartbeat a second, per group. relay_group is this node's
  // group (-1: none); where this node leads it, its relay listens at relay_host, which
  // the group's other nodes can reach, and tells where under relay_group_key().
  int relay_group = -1;
  bool leads_relay_group = false;
  std::string relay_host;
  // TUTTI_SECRET, "" when unset: what the store and its clients prove to each other
  // (store/handshake.h). Never logged, and not in `variables`.
  std::string secret;
};

// The store key under which group `group`'s relay says where it listens (host:port).
std::string relay_group_key(int group);

// Throws Error(kInvalidArgument) with what is missing or contradictory, the
// variables read, and what to set.
Plan make_plan(const Request& request, const Environment& env);

// The plan of a process that joins a running job (tutti_comm_join): only where the
// store is (never served here) and what tells its node apart; its rank and the world
// size stay -1, for the grow that admits it decides them (a launcher's rank and size,
// those of the process it replaces, are ignored). Throws Error(kInvalidArgument)
// where no store address is given (a joiner alone has no job to join, and PMIx
// carries the address only to the ranks started with the job).
Plan make_join_plan(const std::string& init_method, const Environment& env);

}  // namespace tutti::rendezvous
