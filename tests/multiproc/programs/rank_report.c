/* A rank for the multi-process tests: joins the job, reports its place and the place
 * it gets in an even/odd split, and leaves. It sees only tutti.h.
 *
 *   rank_report [--rank R] [--world N] [--method URL] [--init-timeout MS]
 *               [--op-timeout MS] [--no-split] [--linger-ms MS]
 *
 * Prints "PLACE rank=R size=N local=L/LS node=K" and, unless --no-split,
 * "SPLIT color=C rank=R size=N", or "ERROR <TUTTI_STATUS_NAME> <message>" and exits 1.
 * --linger-ms waits that long before destroying the world, and then prints
 * "DESTROYED after MS ms", how long tutti_comm_destroy took. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

static int report(const char* step, tutti_status status) {
  printf("ERROR %s %s: %s\n", tutti_status_name(status), step, tutti_last_error());
  fflush(stdout);
  return 1;
}

int main(int argc, char** argv) {
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  int split = 1;
  long linger_ms = -1;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    if (strcmp(argv[i], "--rank") == 0)
      config.rank = atoi(value), ++i;
    else if (strcmp(argv[i], "--world") == 0)
      config.world_size = atoi(value), ++i;
    else if (strcmp(argv[i], "--method") == 0)
      config.init_method = value, ++i;
    else if (strcmp(argv[i], "--init-timeout") == 0)
      config.init_timeout_ms = atoll(value), ++i;
    else if (strcmp(argv[i], "--op-timeout") == 0)
      config.op_timeout_ms = atoll(value), ++i;
    else if (strcmp(argv[i], "--no-split") == 0)
      split = 0;
    else if (strcmp(argv[i], "--linger-ms") == 0)
      linger_ms = atol(value), ++i;
  }

  tutti_comm* world = NULL;
  tutti_status status = tutti_comm_init(&config, &world);
  if (status != TUTTI_OK) return report("init", status);
  int32_t rank, size, local_rank, local_size, node;
  tutti_comm_rank(world, &rank);
  tutti_comm_size(world, &size);
  tutti_comm_local_rank(world, &local_rank);
  tutti_comm_local_size(world, &local_size);
  tutti_comm_node_rank(world, &node);
  printf("PLACE rank=%d size=%d local=%d/%d node=%d\n", rank, size, local_rank, local_size, node);
  fflush(stdout);

  if (split) {
    /* Even and odd ranks apart, each group in reverse order of world rank. */
    tutti_comm* half = NULL;
    status = tutti_comm_split(world, rank % 2, -rank, &half);
    if (status != TUTTI_OK) return report("split", status);
    int32_t half_rank, half_size;
    tutti_comm_rank(half, &half_rank);
    tutti_comm_size(half, &half_size);
    printf("SPLIT color=%d rank=%d size=%d\n", rank % 2, half_rank, half_size);
    fflush(stdout);
    tutti_comm_destroy(half);
  }
  if (linger_ms < 0) {
    tutti_comm_destroy(world);
    return 0;
  }
  nanosleep(&(struct timespec){linger_ms / 1000, (linger_ms % 1000) * 1000000L}, NULL);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  tutti_comm_destroy(world);
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("DESTROYED after %lld ms\n",
         (long long)(end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1000000);
  return 0;
}
