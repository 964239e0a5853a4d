/* tutti-init-bench: what tutti_comm_init and tutti_comm_destroy cost a real process,
 * with nothing in between: each rank prints one line with the wall time and the CPU
 * time (this process's, all its threads: the event loop's included) of each.
 *
 *   tutti launch -n 512 -- build/bin/tutti-init-bench
 *   INIT rank=3 size=512 init_ms=812.4 init_cpu_ms=9.1 destroy_ms=40.2 destroy_cpu_ms=1.3
 *
 * scripts/bench-launch-init.sh runs it at several sizes and sums the lines up. */
#include <stdio.h>
#include <time.h>

#include "tutti.h"

static double ms(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

int main(void) {
  double wall0 = ms(CLOCK_MONOTONIC), cpu0 = ms(CLOCK_PROCESS_CPUTIME_ID);
  tutti_comm* world = NULL;
  tutti_status status = tutti_comm_init(NULL, &world);
  if (status != TUTTI_OK) {
    fprintf(stderr, "tutti-init-bench: tutti_comm_init failed: %s: %s\n", tutti_status_name(status),
            tutti_last_error());
    return 1;
  }
  double wall1 = ms(CLOCK_MONOTONIC), cpu1 = ms(CLOCK_PROCESS_CPUTIME_ID);
  int32_t rank = -1, size = -1;
  tutti_comm_rank(world, &rank);
  tutti_comm_size(world, &size);
  status = tutti_comm_destroy(world);
  double wall2 = ms(CLOCK_MONOTONIC), cpu2 = ms(CLOCK_PROCESS_CPUTIME_ID);
  if (status != TUTTI_OK) {
    fprintf(stderr, "tutti-init-bench: tutti_comm_destroy failed: %s: %s\n", tutti_status_name(status),
            tutti_last_error());
    return 1;
  }
  printf("INIT rank=%d size=%d init_ms=%.1f init_cpu_ms=%.1f destroy_ms=%.1f destroy_cpu_ms=%.1f\n", rank, size,
         wall1 - wall0, cpu1 - cpu0, wall2 - wall1, cpu2 - cpu1);
  return 0;
}
