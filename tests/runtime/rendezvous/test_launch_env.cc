// How a process learns its rank, size and store address from each launcher's
// variables, which launcher wins when several are present, and the message for each
// way an environment can be incomplete or contradictory. The environment is a map,
// so no test touches the real one.
#include <criterion/criterion.h>

#include <map>
#include <set>
#include <string>

#include "runtime/common/error.h"
#include "runtime/rendezvous/launch_env.h"
#include "tests/runtime/rendezvous/fake_env.h"

using fake_env::fake;
using fake_env::Vars;
using tutti::rendezvous::LaunchEnv;
using tutti::rendezvous::read_launch_env;
using tutti::rendezvous::slurm_step_port;

namespace {

LaunchEnv read(const Vars& vars) {
  std::optional<LaunchEnv> env = read_launch_env(fake(vars));
  cr_assert(env.has_value(), "no launcher was detected");
  return *env;
}

// The message read_launch_env throws for vars; fails the test when it does not throw.
std::string error_of(const Vars& vars) {
  try {
    read_launch_env(fake(vars));
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kInvalidArgument);
    return error.what();
  }
  cr_assert_fail("read_launch_env did not fail");
  return "";
}

// The error names the launcher, the offending variable (in the fault and in the list
// of what was read), and says what to set.
void expect_error(const Vars& vars, const char* launcher, const char* fault, const char* variable) {
  std::string message = error_of(vars);
  std::string opening = std::string(launcher) + " environment is ";
  cr_assert(message.find(opening) == 0, "does not name %s: %s", launcher, message.c_str());
  cr_assert(message.find(fault) != std::string::npos, "lacks \"%s\": %s", fault, message.c_str());
  size_t read = message.find(" (read ");
  cr_assert(read != std::string::npos, "does not list what was read: %s", message.c_str());
  cr_assert(message.find(std::string(variable) + "=", read) != std::string::npos, "does not list %s: %s", variable,
            message.c_str());
  size_t fix = message.rfind("); ");
  cr_assert(fix != std::string::npos && message.find("set ", fix) != std::string::npos, "says nothing to set: %s",
            message.c_str());
}

void expect_store(const LaunchEnv& env, const char* host, int port) {
  cr_assert_str_eq(env.store_host.c_str(), host);
  cr_assert(env.store_port == port, "store port %d, expected %d", env.store_port, port);
}

}  // namespace

Test(launch_env, nothing_set_is_no_launcher, .timeout = 10) {
  cr_assert(!read_launch_env(fake({})).has_value());
  cr_assert(!read_launch_env(fake({{"HOME", "/root"}, {"MASTER_ADDR", "a"}, {"TUTTI_ADDR", "a:1"}})).has_value());
  // salloc and sbatch shells carry SLURM_NTASKS without SLURM_PROCID; that is no launch.
  cr_assert(!read_launch_env(fake({{"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "7"}})).has_value());
}

Test(launch_env, tutti_launch, .timeout = 10) {
  LaunchEnv env = read({{"TUTTI_RANK", "2"},
                        {"TUTTI_WORLD_SIZE", "4"},
                        {"TUTTI_LOCAL_RANK", "0"},
                        {"TUTTI_LOCAL_SIZE", "2"},
                        {"TUTTI_ADDR", "host1:29500"}});
  cr_assert_str_eq(env.launcher.c_str(), "tutti");
  cr_assert(env.rank == 2 && env.world_size == 4 && env.local_rank == 0 && env.local_size == 2);
  cr_assert(env.node_rank == -1);
  expect_store(env, "host1", 29500);
  std::string variables;
  for (const std::string& variable : env.variables) variables += variable + ";";
  cr_assert_str_eq(variables.c_str(),
                   "TUTTI_RANK=2;TUTTI_WORLD_SIZE=4;TUTTI_LOCAL_RANK=0;TUTTI_LOCAL_SIZE=2;TUTTI_ADDR=host1:29500;");
}

// tutti launch --nodes K: the node's index comes with the local place.
Test(launch_env, tutti_launch_emulated_nodes, .timeout = 10) {
  LaunchEnv env = read({{"TUTTI_RANK", "3"},
                        {"TUTTI_WORLD_SIZE", "5"},
                        {"TUTTI_LOCAL_RANK", "0"},
                        {"TUTTI_LOCAL_SIZE", "2"},
                        {"TUTTI_NODE_RANK", "1"},
                        {"TUTTI_ADDR", "127.0.0.1:29500"}});
  cr_assert(env.rank == 3 && env.world_size == 5 && env.local_rank == 0 && env.local_size == 2);
  cr_assert(env.node_rank == 1);
}

Test(launch_env, tutti_launch_minimal, .timeout = 10) {
  LaunchEnv env = read({{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "1"}});
  cr_assert(env.rank == 0 && env.world_size == 1 && env.local_rank == -1 && env.local_size == -1);
  expect_store(env, "", -1);
}

Test(launch_env, torchrun, .timeout = 10) {
  LaunchEnv env = read({{"RANK", "5"},
                        {"WORLD_SIZE", "8"},
                        {"LOCAL_RANK", "1"},
                        {"LOCAL_WORLD_SIZE", "4"},
                        {"GROUP_RANK", "1"},
                        {"MASTER_ADDR", "10.0.0.1"},
                        {"MASTER_PORT", "29400"}});
  cr_assert_str_eq(env.launcher.c_str(), "torch");
  cr_assert(env.rank == 5 && env.world_size == 8 && env.local_rank == 1 && env.local_size == 4);
  cr_assert(env.node_rank == 1);
  // MASTER_PORT is torch's store's; tutti's listens on the next port.
  expect_store(env, "10.0.0.1", 29401);
}

// tutti's store and torch's, both from MASTER_ADDR/MASTER_PORT, never share a port:
// tutti's takes TUTTI_PORT when set, else MASTER_PORT + 1; 65535 leaves it none.
Test(launch_env, master_port_belongs_to_torch, .timeout = 10) {
  Vars torch = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  expect_store(read(torch), "127.0.0.1", 29501);
  torch["TUTTI_PORT"] = "31000";
  expect_store(read(torch), "127.0.0.1", 31000);
  torch["TUTTI_PORT"] = "29500x";
  expect_error(torch, "torchrun", "TUTTI_PORT", "TUTTI_PORT");
  torch.erase("TUTTI_PORT");
  torch["MASTER_PORT"] = "65535";
  expect_error(torch, "torchrun", "MASTER_PORT=65535 leaves no port for tutti's store", "MASTER_PORT");
}

Test(launch_env, slurm, .timeout = 10) {
  Vars vars = {{"SLURM_PROCID", "6"},
               {"SLURM_NTASKS", "7"},
               {"SLURM_LOCALID", "0"},
               {"SLURM_NODEID", "3"},
               {"SLURM_STEP_NODELIST", "gpu[07-10]"},
               {"SLURM_JOB_NODELIST", "gpu[01-10]"},
               {"SLURM_JOB_ID", "123456"},
               {"SLURM_STEP_ID", "2"},
               {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}};
  LaunchEnv env = read(vars);
  cr_assert_str_eq(env.launcher.c_str(), "slurm");
  cr_assert(env.rank == 6 && env.world_size == 7 && env.local_rank == 0 && env.node_rank == 3);
  cr_assert(env.local_size == 1, "local size %d", env.local_size);
  expect_store(env, "gpu07", slurm_step_port(123456, 2));

  vars["SLURM_PROCID"] = "3";
  vars["SLURM_LOCALID"] = "1";
  vars["SLURM_NODEID"] = "1";
  cr_assert(read(vars).local_size == 2);
}

Test(launch_env, slurm_local_size_only_when_the_layout_fits, .timeout = 10) {
  Vars vars = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "0"}};
  cr_assert(read(vars).local_size == -1);
  vars["SLURM_TASKS_PER_NODE"] = "2(x2)";
  cr_assert(read(vars).local_size == 2);
  // The step's own layout is preferred over the allocation's.
  vars["SLURM_STEP_TASKS_PER_NODE"] = "3,1";
  cr_assert(read(vars).local_size == 3);
  // A layout that does not add up to SLURM_NTASKS describes something else: not used.
  vars["SLURM_STEP_TASKS_PER_NODE"] = "4(x2)";
  cr_assert(read(vars).local_size == -1);
  vars["SLURM_STEP_TASKS_PER_NODE"] = "2(x2";
  cr_assert(read(vars).local_size == -1);
  vars["SLURM_STEP_TASKS_PER_NODE"] = "4";
  vars["SLURM_NODEID"] = "1";
  cr_assert(read(vars).local_size == -1);
  // Without a node id the layout cannot be indexed.
  vars.erase("SLURM_NODEID");
  vars["SLURM_STEP_TASKS_PER_NODE"] = "2(x2)";
  cr_assert(read(vars).local_size == -1);
}

Test(launch_env, slurm_nodelist_fallbacks_and_tutti_port, .timeout = 10) {
  Vars vars = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "99"}, {"SLURM_STEP_ID", "0"}};
  expect_store(read(vars), "", -1);
  vars["SLURM_NODELIST"] = "c[3-4]";
  expect_store(read(vars), "c3", slurm_step_port(99, 0));
  vars["SLURM_JOB_NODELIST"] = "b[2-4]";
  expect_store(read(vars), "b2", slurm_step_port(99, 0));
  vars["SLURM_STEP_NODELIST"] = "a1,a2";
  expect_store(read(vars), "a1", slurm_step_port(99, 0));
  vars["TUTTI_PORT"] = "31000";
  expect_store(read(vars), "a1", 31000);
}

Test(launch_env, open_mpi, .timeout = 10) {
  LaunchEnv env = read({{"OMPI_COMM_WORLD_RANK", "3"},
                        {"OMPI_COMM_WORLD_SIZE", "4"},
                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                        {"OMPI_COMM_WORLD_NODE_RANK", "1"}});
  cr_assert_str_eq(env.launcher.c_str(), "openmpi");
  cr_assert(env.rank == 3 && env.world_size == 4 && env.local_rank == 1 && env.local_size == 2);
  // OMPI_COMM_WORLD_NODE_RANK is a rank within the node across jobs, not a node index.
  cr_assert(env.node_rank == -1);
  expect_store(env, "", -1);
}

Test(launch_env, pmi, .timeout = 10) {
  LaunchEnv env = read({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"TUTTI_PORT", "40000"}});
  cr_assert_str_eq(env.launcher.c_str(), "pmi");
  cr_assert(env.rank == 1 && env.world_size == 3 && env.local_rank == -1 && env.local_size == -1);
  // No host from the environment, but the port for rank 0 to listen on.
  expect_store(env, "", 40000);
}

Test(launch_env, launcher_precedence, .timeout = 10) {
  Vars vars = {{"PMI_RANK", "4"},
               {"PMI_SIZE", "5"},
               {"OMPI_COMM_WORLD_RANK", "3"},
               {"OMPI_COMM_WORLD_SIZE", "5"},
               {"SLURM_PROCID", "2"},
               {"SLURM_NTASKS", "5"},
               {"RANK", "1"},
               {"WORLD_SIZE", "5"},
               {"TUTTI_RANK", "0"},
               {"TUTTI_WORLD_SIZE", "5"}};
  const char* expected[] = {"tutti", "torch", "slurm", "openmpi", "pmi"};
  const char* rank_names[] = {"TUTTI_RANK", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};
  const char* size_names[] = {"TUTTI_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
  for (int i = 0; i < 5; ++i) {
    LaunchEnv env = read(vars);
    cr_assert_str_eq(env.launcher.c_str(), expected[i]);
    cr_assert(env.rank == i, "%s gave rank %d", expected[i], env.rank);
    vars.erase(rank_names[i]);
    vars.erase(size_names[i]);
  }
  cr_assert(!read_launch_env(fake(vars)).has_value());
}

Test(launch_env, address_precedence, .timeout = 10) {
  Vars vars = {{"SLURM_PROCID", "0"},
               {"SLURM_NTASKS", "2"},
               {"SLURM_JOB_ID", "5"},
               {"SLURM_STEP_ID", "1"},
               {"SLURM_STEP_NODELIST", "n[1-2]"},
               {"MASTER_ADDR", "master"},
               {"MASTER_PORT", "29500"},
               {"TUTTI_ADDR", "store:1234"}};
  expect_store(read(vars), "store", 1234);
  vars.erase("TUTTI_ADDR");
  expect_store(read(vars), "master", 29501);  // MASTER_PORT itself is torch's
  vars.erase("MASTER_ADDR");
  vars.erase("MASTER_PORT");
  expect_store(read(vars), "n1", slurm_step_port(5, 1));
}

Test(launch_env, tutti_addr_overrides_every_launcher, .timeout = 10) {
  LaunchEnv env = read({{"RANK", "0"},
                        {"WORLD_SIZE", "2"},
                        {"MASTER_ADDR", "m"},
                        {"MASTER_PORT", "not checked when TUTTI_ADDR is set"},
                        {"TUTTI_ADDR", "[::1]:29501"}});
  expect_store(env, "::1", 29501);
  env = read({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}, {"TUTTI_ADDR", "[fe80::1]:80"}});
  expect_store(env, "fe80::1", 80);
  env = read({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}, {"MASTER_ADDR", "[::1]"}, {"MASTER_PORT", "65534"}});
  expect_store(env, "::1", 65535);
}

Test(launch_env, exact_message_for_a_rank_beyond_the_size, .timeout = 10) {
  std::string message = error_of({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}});
  cr_assert_str_eq(message.c_str(),
                   "Slurm environment is contradictory: SLURM_PROCID=9 is not below SLURM_NTASKS=8 (read "
                   "SLURM_PROCID=9, SLURM_NTASKS=8, SLURM_LOCALID=1); check the srun command, or set TUTTI_RANK and "
                   "TUTTI_WORLD_SIZE");
}

Test(launch_env, rank_and_size_come_together, .timeout = 10) {
  expect_error({{"TUTTI_RANK", "0"}}, "tutti launch", "TUTTI_RANK is set but TUTTI_WORLD_SIZE is not", "TUTTI_RANK");
  expect_error({{"TUTTI_WORLD_SIZE", "4"}}, "tutti launch", "TUTTI_WORLD_SIZE is set but TUTTI_RANK is not",
               "TUTTI_WORLD_SIZE");
  expect_error({{"RANK", "0"}}, "torchrun", "RANK is set but WORLD_SIZE is not", "RANK");
  expect_error({{"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}, "torchrun",
               "WORLD_SIZE is set but RANK is not", "WORLD_SIZE");
  expect_error({{"SLURM_PROCID", "0"}}, "Slurm", "SLURM_PROCID is set but SLURM_NTASKS is not", "SLURM_PROCID");
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"}}, "Open MPI", "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE",
               "OMPI_COMM_WORLD_RANK");
  expect_error({{"PMI_SIZE", "2"}}, "PMI", "PMI_SIZE is set but PMI_RANK is not", "PMI_SIZE");
}

Test(launch_env, integers_are_strict, .timeout = 10) {
  expect_error({{"TUTTI_RANK", "3x"}, {"TUTTI_WORLD_SIZE", "4"}}, "tutti launch",
               "TUTTI_RANK=\"3x\" is not a whole number", "TUTTI_RANK");
  expect_error({{"TUTTI_RANK", ""}, {"TUTTI_WORLD_SIZE", "4"}}, "tutti launch", "TUTTI_RANK=\"\" is not a whole number",
               "TUTTI_RANK");
  expect_error({{"RANK", " 1"}, {"WORLD_SIZE", "4"}}, "torchrun", "RANK=\" 1\" is not a whole number", "RANK");
  expect_error({{"RANK", "+1"}, {"WORLD_SIZE", "4"}}, "torchrun", "RANK=\"+1\" is not a whole number", "RANK");
  expect_error({{"RANK", "1"}, {"WORLD_SIZE", "4.0"}}, "torchrun", "WORLD_SIZE=\"4.0\" is not a whole number",
               "WORLD_SIZE");
  expect_error({{"RANK", "99999999999999999999"}, {"WORLD_SIZE", "4"}}, "torchrun", "is not a whole number", "RANK");
  expect_error({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}, "torchrun", "RANK=-1 is negative", "RANK");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "-2"}}, "torchrun", "LOCAL_RANK=-2 is negative",
               "LOCAL_RANK");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"GROUP_RANK", "x"}}, "torchrun", "GROUP_RANK=\"x\"", "GROUP_RANK");
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_NODEID", "-1"}}, "Slurm",
               "SLURM_NODEID=-1 is negative", "SLURM_NODEID");
  expect_error({{"PMI_RANK", "0"}, {"PMI_SIZE", "3000000000"}}, "PMI", "PMI_SIZE=3000000000 is above", "PMI_SIZE");
}

Test(launch_env, sizes_and_ranks_must_agree, .timeout = 10) {
  expect_error({{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "0"}}, "tutti launch", "TUTTI_WORLD_SIZE=0 is below 1",
               "TUTTI_WORLD_SIZE");
  expect_error({{"TUTTI_RANK", "4"}, {"TUTTI_WORLD_SIZE", "4"}}, "tutti launch",
               "contradictory: TUTTI_RANK=4 is not below TUTTI_WORLD_SIZE=4", "TUTTI_RANK");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}}, "torchrun",
               "LOCAL_RANK=4 is not below LOCAL_WORLD_SIZE=4", "LOCAL_RANK");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "4"}}, "torchrun",
               "LOCAL_WORLD_SIZE=4 is above WORLD_SIZE=2", "LOCAL_WORLD_SIZE");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}}, "torchrun",
               "LOCAL_RANK=2 is not below WORLD_SIZE=2", "LOCAL_RANK");
  expect_error({{"OMPI_COMM_WORLD_RANK", "0"},
                {"OMPI_COMM_WORLD_SIZE", "8"},
                {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
               "Open MPI", "OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2",
               "OMPI_COMM_WORLD_LOCAL_RANK");
}

Test(launch_env, tutti_addr_must_be_host_and_port, .timeout = 10) {
  const char* bad[] = {"node", "node:", ":29500", "::1:29500", "[::1]29500", "[::1]", "[]:80", "[::1:80"};
  for (const char* addr : bad) {
    std::string message = error_of({{"TUTTI_RANK", "0"}, {"TUTTI_WORLD_SIZE", "1"}, {"TUTTI_ADDR", addr}});
    cr_assert(message.find(std::string("TUTTI_ADDR=") + addr) != std::string::npos, "%s", message.c_str());
    cr_assert(message.find("set TUTTI_ADDR to host:port") != std::string::npos, "%s", message.c_str());
  }
  const char* bad_ports[] = {"node:0", "node:65536", "node:x", "[::1]:-1", "node:80 "};
  for (const char* addr : bad_ports) {
    expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TUTTI_ADDR", addr}}, "torchrun", "which is not in 1..65535",
                 "TUTTI_ADDR");
  }
}

Test(launch_env, master_addr_and_port_come_together, .timeout = 10) {
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "m"}}, "torchrun",
               "MASTER_ADDR is set but MASTER_PORT is not", "MASTER_ADDR");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "29500"}}, "torchrun",
               "MASTER_PORT is set but MASTER_ADDR is not", "MASTER_PORT");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "http"}}, "torchrun",
               "MASTER_PORT=http is not a port in 1..65535", "MASTER_PORT");
  expect_error({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "70000"}}, "torchrun",
               "MASTER_PORT=70000 is not a port", "MASTER_PORT");
}

Test(launch_env, slurm_address_errors, .timeout = 10) {
  Vars vars = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "gpu[01-03"}};
  expect_error(vars, "Slurm", "unbalanced '[' at column 4", "SLURM_STEP_NODELIST");
  vars["SLURM_STEP_NODELIST"] = "gpu[01-03]";
  expect_error(vars, "Slurm", "SLURM_JOB_ID is not set", "SLURM_STEP_NODELIST");
  vars["SLURM_JOB_ID"] = "12";
  expect_error(vars, "Slurm", "SLURM_STEP_ID is not set", "SLURM_JOB_ID");
  vars["SLURM_STEP_ID"] = "x";
  expect_error(vars, "Slurm", "SLURM_STEP_ID=\"x\" is not a whole number", "SLURM_STEP_ID");
  vars["SLURM_STEP_ID"] = "0";
  vars["TUTTI_PORT"] = "0";
  expect_error(vars, "Slurm", "TUTTI_PORT=0 is below 1", "TUTTI_PORT");
  vars["TUTTI_PORT"] = "65536";
  expect_error(vars, "Slurm", "TUTTI_PORT=65536 is above 65535", "TUTTI_PORT");
  expect_error({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}, {"TUTTI_PORT", "p"}}, "PMI", "TUTTI_PORT=\"p\"", "TUTTI_PORT");
}

Test(launch_env, slurm_step_port_is_in_range_and_spread, .timeout = 10) {
  for (long job = 0; job < 2000; job += 7) {
    for (long step : {0L, 1L, 5L, 4294967294L, 4294967295L}) {
      int port = slurm_step_port(job, step);
      cr_assert(port >= 20000 && port < 32768, "job %ld step %ld gave port %d", job, step, port);
      cr_assert(port == slurm_step_port(job, step), "not deterministic");
    }
  }
  std::set<int> steps;
  for (long step = 0; step < 100; ++step) steps.insert(slurm_step_port(4242, step));
  cr_assert(steps.size() == 100, "steps 0..99 of one job share ports: %zu distinct", steps.size());
  std::set<int> jobs;
  for (long job = 1; job <= 1000; ++job) jobs.insert(slurm_step_port(job, 0));
  // 1000 draws from 12768 ports leave about 962 distinct (951 here); far fewer means a
  // weak mix.
  cr_assert(jobs.size() >= 930, "jobs 1..1000 share ports: %zu distinct", jobs.size());
  std::set<int> both;
  for (long job = 1; job <= 100; ++job) {
    for (long step = 0; step < 10; ++step) both.insert(slurm_step_port(job, step));
  }
  cr_assert(both.size() >= 920, "jobs x steps share ports: %zu distinct", both.size());
  // Neighbouring jobs do not land on neighbouring ports.
  cr_assert(slurm_step_port(1000, 0) + 1 != slurm_step_port(1001, 0));
}

Test(launch_env, process_environment_reads_the_real_one, .timeout = 10) {
  tutti::rendezvous::Environment env = tutti::rendezvous::process_environment();
  setenv("TUTTI_TEST_LAUNCH_ENV", "value", 1);
  cr_assert(env("TUTTI_TEST_LAUNCH_ENV") == std::optional<std::string>("value"));
  setenv("TUTTI_TEST_LAUNCH_ENV", "", 1);
  cr_assert(!env("TUTTI_TEST_LAUNCH_ENV").has_value());
  unsetenv("TUTTI_TEST_LAUNCH_ENV");
  cr_assert(!env("TUTTI_TEST_LAUNCH_ENV").has_value());
}
