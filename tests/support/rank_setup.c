#include "rank_setup.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char* keep(tt_rank_setup* setup, const char* format, va_list args) {
  char* slot = setup->text[setup->used++];
  vsnprintf(slot, sizeof setup->text[0], format, args);
  return slot;
}

void tt_setup_init(tt_rank_setup* setup, const char* program) {
  memset(setup, 0, sizeof *setup);
  tt_setup_arg(setup, "%s", program);
}

void tt_setup_arg(tt_rank_setup* setup, const char* format, ...) {
  int n = 0;
  while (setup->argv[n]) ++n;
  va_list args;
  va_start(args, format);
  setup->argv[n] = keep(setup, format, args);
  va_end(args);
}

void tt_setup_env(tt_rank_setup* setup, const char* format, ...) {
  int n = 0;
  while (setup->env[n]) ++n;
  va_list args;
  va_start(args, format);
  setup->env[n] = keep(setup, format, args);
  va_end(args);
}

void tt_setup_slurm_env(tt_rank_setup* setup, int rank, int n, int port) {
  tt_setup_env(setup, "SLURM_PROCID=%d", rank);
  tt_setup_env(setup, "SLURM_NTASKS=%d", n);
  tt_setup_env(setup, "SLURM_LOCALID=%d", rank);
  tt_setup_env(setup, "SLURM_NODEID=0");
  tt_setup_env(setup, "SLURM_STEP_NODELIST=localhost");
  tt_setup_env(setup, "SLURM_JOB_ID=4242");
  tt_setup_env(setup, "SLURM_STEP_ID=0");
  tt_setup_env(setup, "TUTTI_PORT=%d", port);
}

void tt_setup_openmpi_env(tt_rank_setup* setup, int rank, int n, int port) {
  tt_setup_env(setup, "OMPI_COMM_WORLD_RANK=%d", rank);
  tt_setup_env(setup, "OMPI_COMM_WORLD_SIZE=%d", n);
  tt_setup_env(setup, "OMPI_COMM_WORLD_LOCAL_RANK=%d", rank);
  tt_setup_env(setup, "MASTER_ADDR=127.0.0.1");
  /* MASTER_PORT is torch's store's; tutti's listens on the port after it, the free one. */
  tt_setup_env(setup, "MASTER_PORT=%d", port - 1);
}
