#include "repl/job.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bindings/lua/state.h"
#include "bindings/lua/status.h"

namespace tutti::repl {
namespace {

constexpr const char* kRankVariables[] = {"TUTTI_RANK", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};

const char* rank_variable_value() {
  for (const char* name : kRankVariables) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return nullptr;
}

}  // namespace

bool speaks_before_joining() {
  const char* value = rank_variable_value();
  if (value == nullptr) return true;
  char* end = nullptr;
  long rank = std::strtol(value, &end, 10);
  return *end != '\0' || rank == 0;
}

bool may_serve_store() {
  const char* rank = rank_variable_value();
  const char* server = std::getenv("TUTTI_STORE_SERVER");
  const bool launcher_serves = server != nullptr && std::string_view(server) == "launcher";
  return (rank == nullptr || std::string_view(rank) == "0") && !launcher_serves && !tutti::lua::started_to_join();
}

tutti_comm* join_job(const char* name) {
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  tutti_comm* comm = nullptr;
  tutti_status status = TUTTI_OK;
  if (tutti::lua::started_to_join()) {
    // Started by tutti launch --restart in place of a lost rank (or by hand, with
    // TUTTI_ADDR): it joins the job as the survivors grow, which give it its rank and
    // its communicator's name.
    status = tutti_comm_join(&config, &comm);
  } else {
    config.name = name;
    // Outside a launcher the REPL is rank 0 of a world of one, also where a store
    // address is set (then it serves its store there); with none, the runtime serves
    // it on a free loopback port.
    if (rank_variable_value() == nullptr) {
      config.rank = 0;
      config.world_size = 1;
    }
    status = tutti_comm_init(&config, &comm);
  }
  if (status != TUTTI_OK) {
    std::fprintf(stderr, "tutti: cannot join the job: %s: %s\n", tutti_status_name(status),
                 tutti::lua::in_lua_terms(tutti_last_error()).c_str());
    return nullptr;
  }
  return comm;
}

}  // namespace tutti::repl
