/* coll_desync: ranks that fall out of step, for test_desync.c.
 *
 *   coll_desync --case NAME
 *
 *   skip    after 3 all_reduces, the last rank skips the 4th and waits instead in a
 *           receive from rank 0 that never comes (op timeout 8 s; 3 s for the others,
 *           which therefore time out first); every rank then prints its error (the
 *           skipper's is a timeout, or PEER_LOST once rank 0 has exited)
 *           ("ERROR <status> <message>") and its history (tutti_comm_dump to stdout).
 *   signal  2 all_reduces, then raise(SIGUSR1) (the job sets TUTTI_DUMP_SIGNAL=USR1):
 *           the event loop writes the history to stderr; the rank waits for it.
 *
 * Exits 0 when the case went as expected on this rank, 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

int main(int argc, char** argv) {
  const char* name = argc > 2 && strcmp(argv[1], "--case") == 0 ? argv[2] : "skip";
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* The rank that skips waits longer than the others, so that they time out while it
   * is still in its receive. */
  const char* env_rank = getenv("TUTTI_RANK");
  const char* env_size = getenv("TUTTI_WORLD_SIZE");
  int skipper = env_rank && env_size && atoi(env_rank) == atoi(env_size) - 1;
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  config.op_timeout_ms = skipper ? 8000 : 3000;
  tutti_comm* comm;
  if (tutti_comm_init(&config, &comm) != TUTTI_OK) {
    printf("FAIL init: %s\n", tutti_last_error());
    return 1;
  }
  int32_t rank, size;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  float one = 1, sum = 0;
  for (int round = 0; round < 3; ++round) {
    if (tutti_all_reduce(comm, &one, &sum, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL) != TUTTI_OK) {
      printf("FAIL all_reduce %d: %s\n", round, tutti_last_error());
      return 1;
    }
  }
  int ok = 1;
  if (strcmp(name, "signal") == 0) {
    raise(SIGUSR1);
    nanosleep(&(struct timespec){0, 300000000}, NULL); /* the loop writes the dump meanwhile */
  } else {
    tutti_status status;
    if (rank == size - 1) {
      float never = 0;
      status = tutti_recv(comm, &never, 1, TUTTI_DTYPE_FLOAT32, 0, 99, NULL);
    } else {
      status = tutti_all_reduce(comm, &one, &sum, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL);
    }
    printf("ERROR %s %s\n", tutti_status_name(status), status == TUTTI_OK ? "" : tutti_last_error());
    /* The skipper's receive ends in its own timeout, or in PEER_LOST once rank 0 has
     * given up and exited. */
    ok = status == TUTTI_ERR_TIMEOUT || (rank == size - 1 && status == TUTTI_ERR_PEER_LOST);
    fflush(stdout);
    if (tutti_comm_dump(comm, 1) != TUTTI_OK) {
      printf("FAIL tutti_comm_dump: %s\n", tutti_last_error());
      ok = 0;
    }
    /* Rank 0's exit ends the skipper's receive (PEER_LOST). The other waiting ranks
     * started all_reduce #4 a little later than rank 0 (under load, up to hundreds of
     * ms): rank 0 stays until they too have timed out, so that each of them still
     * sees the skipper in its receive. */
    if (rank == 0) nanosleep(&(struct timespec){1, 500000000}, NULL);
  }
  tutti_comm_destroy(comm);
  return ok ? 0 : 1;
}
