/* One rank's command line and extra environment, built up with printf-style helpers,
 * for tt_spawn (processes.h). All strings live inside the struct. */
#ifndef TUTTI_TESTS_SUPPORT_RANK_SETUP_H
#define TUTTI_TESTS_SUPPORT_RANK_SETUP_H

#define TT_MAX_ARGS 16
#define TT_MAX_VARS 16

typedef struct tt_rank_setup {
  char* argv[TT_MAX_ARGS + 1];
  char* env[TT_MAX_VARS + 1];
  char text[TT_MAX_ARGS + TT_MAX_VARS][192];
  int used;
} tt_rank_setup;

/* Clears setup and makes program its argv[0]. */
void tt_setup_init(tt_rank_setup* setup, const char* program);
/* Appends a printf-formatted argument. */
__attribute__((format(printf, 2, 3))) void tt_setup_arg(tt_rank_setup* setup, const char* format, ...);
/* Appends a printf-formatted "NAME=value" to the extra environment. */
__attribute__((format(printf, 2, 3))) void tt_setup_env(tt_rank_setup* setup, const char* format, ...);

/* The variables srun and mpirun give rank `rank` of n on one node, for ranks started
 * by hand as those launchers would start them; rank 0 serves the store on `port`
 * (Slurm: TUTTI_PORT with localhost as the step's node list; Open MPI: MASTER_ADDR
 * and MASTER_PORT = port - 1, which mpirun does not set, tutti's store taking the port
 * after torch's). */
void tt_setup_slurm_env(tt_rank_setup* setup, int rank, int n, int port);
void tt_setup_openmpi_env(tt_rank_setup* setup, int rank, int n, int port);

#endif
