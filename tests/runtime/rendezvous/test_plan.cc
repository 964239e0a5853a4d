// make_plan: where this rank's place on its node comes from when the program's config
// and the launcher both speak (fuzz_launch_env found a config world size smaller than
// the launcher's giving a plan whose local size was larger than its world), and where
// the store is: given by hand, through PMIx, from Slurm's node list, or nowhere. And
// make_join_plan: a joiner's store and node, never its rank.
#include <criterion/criterion.h>

#include <map>
#include <optional>
#include <string>

#include "runtime/common/error.h"
#include "runtime/rendezvous/plan.h"
#include "runtime/rendezvous/pmix_exchange.h"
#include "tests/runtime/rendezvous/fake_env.h"

using fake_env::fake;
using fake_env::Vars;
using tutti::rendezvous::make_join_plan;
using tutti::rendezvous::make_plan;
using tutti::rendezvous::Plan;
using tutti::rendezvous::Request;

namespace {

// Rank 1 of 4 under tutti launch, all four on this node.
const Vars kTuttiLaunch = {{"TUTTI_RANK", "1"},
                           {"TUTTI_WORLD_SIZE", "4"},
                           {"TUTTI_LOCAL_RANK", "1"},
                           {"TUTTI_LOCAL_SIZE", "4"},
                           {"TUTTI_ADDR", "127.0.0.1:29500"}};

Request tcp_request(int rank, int world_size) {
  Request request;
  request.rank = rank;
  request.world_size = world_size;
  request.init_method = "tcp://127.0.0.1:29600";
  return request;
}

}  // namespace

Test(plan, launcher_places_the_rank_in_its_own_world, .timeout = 10) {
  Plan plan = make_plan(Request{}, fake(kTuttiLaunch));
  cr_assert(plan.rank == 1 && plan.world_size == 4, "rank %d of %d", plan.rank, plan.world_size);
  cr_assert(plan.local_rank == 1 && plan.local_size == 4, "local rank %d of %d", plan.local_rank, plan.local_size);

  // A config that repeats the launcher's world keeps the launcher's places.
  plan = make_plan(tcp_request(1, 4), fake(kTuttiLaunch));
  cr_assert(plan.local_rank == 1 && plan.local_size == 4, "local rank %d of %d", plan.local_rank, plan.local_size);
}

Test(plan, config_with_another_world_size_leaves_places_to_the_meeting, .timeout = 10) {
  Plan plan = make_plan(tcp_request(1, 2), fake(kTuttiLaunch));
  cr_assert(plan.rank == 1 && plan.world_size == 2, "rank %d of %d", plan.rank, plan.world_size);
  cr_assert(plan.local_rank == -1 && plan.local_size == -1 && plan.node_rank == -1,
            "the launcher's places of a world of 4 were kept in a world of 2: local rank %d of %d, node %d",
            plan.local_rank, plan.local_size, plan.node_rank);
}

Test(plan, launcher_node_id_still_names_the_node, .timeout = 10) {
  // Slurm's emulated nodes share a hostname; SLURM_NODEID is what tells them apart,
  // whichever world the config makes.
  Vars slurm = {{"SLURM_PROCID", "3"},
                {"SLURM_NTASKS", "4"},
                {"SLURM_LOCALID", "1"},
                {"SLURM_NODEID", "1"},
                {"SLURM_STEP_NODELIST", "n[1-2]"},
                {"SLURM_JOB_ID", "77"},
                {"SLURM_STEP_ID", "0"}};
  Plan plan = make_plan(Request{}, fake(slurm));
  cr_assert(plan.node_key == "node#1" && plan.node_rank == 1, "node key \"%s\", node %d", plan.node_key.c_str(),
            plan.node_rank);
  plan = make_plan(tcp_request(0, 2), fake(slurm));
  cr_assert(plan.node_key == "node#1" && plan.node_rank == -1, "node key \"%s\", node %d", plan.node_key.c_str(),
            plan.node_rank);
  // Where Slurm names the node, the name wins: a spare started as a step of its own,
  // whose SLURM_NODEID counts its step's nodes only, still finds its node's ranks.
  slurm["SLURMD_NODENAME"] = "n2";
  plan = make_plan(Request{}, fake(slurm));
  cr_assert(plan.node_key == "node:n2" && plan.node_rank == 1, "node key \"%s\", node %d", plan.node_key.c_str(),
            plan.node_rank);
}

Test(plan, a_joiner_needs_only_the_store, .timeout = 10) {
  // tutti launch --restart's variables: the store, and the place of the rank replaced.
  Vars launched = {{"TUTTI_RANK", "2"},
                   {"TUTTI_WORLD_SIZE", "4"},
                   {"TUTTI_NODE_RANK", "1"},
                   {"TUTTI_ADDR", "127.0.0.1:29400"},
                   {"TUTTI_STORE_SERVER", "launcher"},
                   {"TUTTI_SECRET", "s3cret"}};
  Plan plan = make_join_plan("", fake(launched));
  cr_assert(!plan.serve_store && plan.store_host == "127.0.0.1" && plan.store_port == 29400);
  cr_assert(plan.rank == -1 && plan.world_size == -1, "the grow decides them");
  cr_assert(plan.node_key == "node#1" && plan.secret == "s3cret" && plan.store_owner == "tutti launch");
  // TUTTI_ADDR alone, by hand; tcp:// from the config.
  plan = make_join_plan("", fake({{"TUTTI_ADDR", "[::1]:29500"}}));
  cr_assert(plan.store_host == "::1" && plan.store_port == 29500 && !plan.serve_store);
  plan = make_join_plan("tcp://10.0.0.1:4000", fake({}));
  cr_assert(plan.store_host == "10.0.0.1" && plan.store_port == 4000 && !plan.serve_store);
  // Nothing to join, and Slurm's step variables, which name the joiner's own step.
  auto refusal = [](const Vars& vars) -> std::string {
    try {
      make_join_plan("", fake(vars));
    } catch (const tutti::Error& error) {
      return error.what();
    }
    return "no error";
  };
  std::string error = refusal({});
  cr_assert(error.find("tutti_comm_join: env:// found no address of the job's store") == 0, "%s", error.c_str());
  error = refusal({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "1"},
                   {"SLURM_NODEID", "0"},
                   {"SLURM_JOB_ID", "77"},
                   {"SLURM_STEP_ID", "3"},
                   {"SLURM_STEP_NODELIST", "n2"}});
  cr_assert(error.find("under srun, a joiner cannot tell where the job's store is") != std::string::npos, "%s",
            error.c_str());
}

Test(plan, where_the_store_is_under_slurm_and_pmix, .timeout = 10) {
  Vars slurm = {{"SLURM_PROCID", "0"},  {"SLURM_NTASKS", "2"},  {"SLURM_NODEID", "0"},
                {"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NODELIST", "n[1-2]"}};
  // Without PMIx: the first node of the step, a Slurm node name.
  Plan plan = make_plan(Request{}, fake(slurm));
  cr_expect(plan.store_host == "n1" && plan.store_host_is_slurm_node && !plan.store_via_pmix);
  cr_expect(plan.store_port == tutti::rendezvous::slurm_step_port(77, 0));

  // srun --mpi=pmix: through PMIx where the build has it, on any free port.
  Vars pmix = slurm;
  pmix["PMIX_NAMESPACE"] = "slurm.pmix.77.0";
  pmix["PMIX_RANK"] = "0";
  pmix["TUTTI_HOST"] = "node-a";
  plan = make_plan(Request{}, fake(pmix));
  if (tutti::rendezvous::pmix_built()) {
    cr_expect(plan.store_via_pmix && plan.serve_store && plan.store_host == "node-a" && plan.store_port == 0);
  } else {
    cr_expect(!plan.store_via_pmix && plan.store_host == "n1");
  }

  // An address given by hand wins over both.
  pmix["MASTER_ADDR"] = "master";
  pmix["MASTER_PORT"] = "29500";
  plan = make_plan(Request{}, fake(pmix));
  cr_expect(!plan.store_via_pmix && !plan.store_host_is_slurm_node && plan.store_host == "master");

  // mpirun: Open MPI's variables name no host, so PMIx is the only way, and rank 1
  // serves nothing.
  Vars mpirun = {{"OMPI_COMM_WORLD_RANK", "1"},
                 {"OMPI_COMM_WORLD_SIZE", "2"},
                 {"PMIX_NAMESPACE", "prterun-vm-1@1"},
                 {"PMIX_RANK", "1"}};
  plan = make_plan(Request{}, fake(mpirun));
  cr_expect(plan.store_via_pmix && !plan.serve_store && plan.store_port == 0);
}

// A launcher that names no rendezvous host, with no address given by hand and no PMIx
// server to carry one: the message names every variable read and what to set.
Test(plan, a_launcher_with_no_rendezvous_says_what_to_set, .timeout = 10) {
  const Vars launchers[] = {
      {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}},                          // MPICH's mpiexec
      {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}},  // mpirun with PMIx stripped
  };
  const char* read[] = {"PMI_RANK=0, PMI_SIZE=2", "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2"};
  for (int i = 0; i < 2; ++i) {
    try {
      make_plan(Request{}, fake(launchers[i]));
      cr_assert_fail("make_plan did not fail");
    } catch (const tutti::Error& error) {
      std::string message = error.what();
      cr_expect(error.status() == tutti::Status::kInvalidArgument);
      cr_expect(message.rfind("tutti_comm_init: env:// found no rendezvous address (variables read: ", 0) == 0, "%s",
                message.c_str());
      cr_expect(message.find(read[i]) != std::string::npos, "%s", message.c_str());
      cr_expect(message.find("; set TUTTI_ADDR=HOST:PORT, or MASTER_ADDR and MASTER_PORT") != std::string::npos, "%s",
                message.c_str());
    }
  }
}

// A program started alone is rank 0 of a world of one and serves its own store on a
// free loopback port, as an MPI singleton is; a store address or a place that says
// otherwise keeps the old errors, since those are a launcher half set up.
Test(plan, a_program_started_alone_is_a_world_of_one, .timeout = 10) {
  Plan plan = make_plan(Request{}, fake({}));
  cr_expect(plan.rank == 0 && plan.world_size == 1 && plan.local_rank == 0 && plan.local_size == 1 &&
            plan.node_rank == 0);
  cr_expect(plan.serve_store && plan.store_host == "127.0.0.1" && plan.store_port == 0, "%s:%d",
            plan.store_host.c_str(), plan.store_port);
  cr_expect(plan.launcher == "none (a world of one)", "%s", plan.launcher.c_str());

  Request one;
  one.rank = 0;
  one.world_size = 1;
  cr_expect(make_plan(one, fake({})).serve_store);

  auto fails = [](const Request& request, const Vars& vars, const char* expected) {
    try {
      make_plan(request, fake(vars));
      cr_expect_fail("make_plan did not fail for \"%s\"", expected);
    } catch (const tutti::Error& error) {
      cr_expect(std::string(error.what()).find(expected) != std::string::npos, "%s", error.what());
    }
  };
  fails(Request{}, {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}}, "this process's rank is unknown");
  fails(Request{}, {{"TUTTI_ADDR", "127.0.0.1:29500"}}, "this process's rank is unknown");
  Request two;
  two.world_size = 2;
  fails(two, {}, "this process's rank is unknown");
  fails(tcp_request(-1, -1), {}, "this process's rank is unknown");
}

// Node relays (TUTTI_RELAY): on from 2,048 ranks on several nodes by default, or when asked; a node's
// local rank 0 serves its relay, and every rank of the node looks for it in one file,
// named by the job's store and the node. Where no launcher says who shares a node, or
// the store's port is not known in advance, "on" is an error and "auto" goes without.
Test(plan, relays_from_a_size_or_when_asked, .timeout = 10) {
  Plan plan = make_plan(Request{}, fake(kTuttiLaunch));
  cr_expect(!plan.through_relay && !plan.serve_relay, "4 ranks need no relay by default");

  Vars big = kTuttiLaunch;
  big["TUTTI_WORLD_SIZE"] = "4096";
  big["TUTTI_LOCAL_SIZE"] = "4096";
  plan = make_plan(Request{}, fake(big));
  cr_expect(!plan.through_relay, "4,096 ranks on one node need no relay by default");
  big["TUTTI_LOCAL_SIZE"] = "64";
  big["TMPDIR"] = "/scratch";
  plan = make_plan(Request{}, fake(big));
  cr_expect(plan.through_relay && !plan.serve_relay, "local rank 1 of 4,096 ranks goes through its node's relay");
  cr_expect(plan.relay_file.rfind("/scratch/tutti-", 0) == 0 &&
                plan.relay_file.find("-relay-127.0.0.1-29500-") != std::string::npos,
            "%s", plan.relay_file.c_str());
  big["TUTTI_LOCAL_RANK"] = "0";
  big["TUTTI_RANK"] = "0";
  plan = make_plan(Request{}, fake(big));
  cr_expect(plan.through_relay && plan.serve_relay, "local rank 0 serves its node's relay");
  big["TUTTI_RELAY"] = "off";
  plan = make_plan(Request{}, fake(big));
  cr_expect(!plan.through_relay && !plan.serve_relay);

  Vars asked = kTuttiLaunch;
  asked["TUTTI_RELAY"] = "on";
  plan = make_plan(Request{}, fake(asked));
  cr_expect(plan.through_relay && !plan.serve_relay);

  // Nodes are told apart in the file's name, as emulated nodes of one machine are.
  Vars other_node = asked;
  other_node["TUTTI_NODE_RANK"] = "1";
  Plan elsewhere = make_plan(Request{}, fake(other_node));
  cr_expect(elsewhere.node_key != plan.node_key && elsewhere.relay_file != plan.relay_file, "%s and %s",
            elsewhere.relay_file.c_str(), plan.relay_file.c_str());

  asked["TUTTI_RELAY"] = "yes";
  try {
    make_plan(Request{}, fake(asked));
    cr_assert_fail("TUTTI_RELAY=yes was taken");
  } catch (const tutti::Error& error) {
    cr_expect(std::string(error.what()).find("TUTTI_RELAY=\"yes\" is not on, off or auto") != std::string::npos, "%s",
              error.what());
  }
  try {
    make_plan(tcp_request(1, 4), fake({{"TUTTI_RELAY", "on"}}));
    cr_assert_fail("a relay was planned with no launcher to say who shares a node");
  } catch (const tutti::Error& error) {
    cr_expect(std::string(error.what()).find("TUTTI_RELAY=on, but no launcher said which ranks share a node") !=
                  std::string::npos,
              "%s", error.what());
  }
  Plan by_hand = make_plan(tcp_request(1, 4096), fake({}));
  cr_expect(!by_hand.through_relay, "auto goes without where it cannot");
}

// Relays of relays (TUTTI_RELAY_GROUP): groups of 64 nodes from 16,384 ranks by
// default, or of the nodes asked for; the first node of each group (by the launcher's
// node index) leads it and listens where the others can reach it. No groups without
// node relays, or without a node index.
Test(plan, relay_groups_from_a_size_or_when_asked, .timeout = 10) {
  Vars big = kTuttiLaunch;
  big["TUTTI_WORLD_SIZE"] = "8192";
  big["TUTTI_LOCAL_SIZE"] = "8";
  big["TUTTI_NODE_RANK"] = "130";
  Plan plan = make_plan(Request{}, fake(big));
  cr_expect(plan.through_relay && plan.relay_group == -1, "8,192 ranks need no relays of relays by default");
  big["TUTTI_WORLD_SIZE"] = "100000";
  big["TUTTI_HOST"] = "10.0.0.130";
  plan = make_plan(Request{}, fake(big));
  cr_expect(plan.relay_group == 2 && !plan.leads_relay_group, "node 130 is in group 2 of 64 nodes each, got %d",
            plan.relay_group);
  big["TUTTI_NODE_RANK"] = "128";
  plan = make_plan(Request{}, fake(big));
  cr_expect(plan.relay_group == 2 && plan.leads_relay_group && plan.relay_host == "10.0.0.130",
            "node 128 leads group 2, listening at TUTTI_HOST");
  big["TUTTI_RELAY_GROUP"] = "0";
  plan = make_plan(Request{}, fake(big));
  cr_expect(plan.through_relay && plan.relay_group == -1, "TUTTI_RELAY_GROUP=0: node relays alone");

  Vars asked = kTuttiLaunch;
  asked["TUTTI_RELAY"] = "on";
  asked["TUTTI_RELAY_GROUP"] = "2";
  asked["TUTTI_NODE_RANK"] = "3";
  plan = make_plan(Request{}, fake(asked));
  cr_expect(plan.relay_group == 1 && !plan.leads_relay_group, "node 3 is in group 1 of 2 nodes each");
  asked["TUTTI_RELAY"] = "off";
  plan = make_plan(Request{}, fake(asked));
  cr_expect(plan.relay_group == -1, "no relays of relays without relays");
  asked["TUTTI_RELAY"] = "on";
  asked.erase("TUTTI_NODE_RANK");
  plan = make_plan(Request{}, fake(asked));
  cr_expect(plan.through_relay && plan.relay_group == -1, "no groups without a node index");
  for (const char* bad : {"1", "-4", "many", "8x"}) {
    asked["TUTTI_RELAY_GROUP"] = bad;
    try {
      make_plan(Request{}, fake(asked));
      cr_expect_fail("TUTTI_RELAY_GROUP=%s was taken", bad);
    } catch (const tutti::Error& error) {
      cr_expect(std::string(error.what()).find("is not a number of nodes from 2 up") != std::string::npos, "%s",
                error.what());
    }
  }
  cr_expect_eq(tutti::rendezvous::relay_group_key(7), "tutti.store/relay/group/7");
}
