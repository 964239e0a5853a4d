/* A device collective that cannot finish (gpu_timeouts): a held stream on one rank,
 * which the watchdog times out, aborting the NCCL communicator; and a rank that skips a
 * collective, which the other times out naming it (through NCCL with a GPU per rank,
 * through the staging path on a shared GPU); a new communicator works after either.
 * Skips, saying why, without a CUDA device. */
#include <stdio.h>

#include "tests/gpu/gpu_require.h"
#include "tests/gpu/run_ranks.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int devices = tt_require_gpus("gpu.test_timeouts", 1);
  static const char* const stall[] = {"stall", NULL};
  static const char* const aborted[] = {"NCCL communicator is aborted", NULL};
  tt_gpu_run("a held stream times out and NCCL is aborted", 1, 120000, "gpu_timeouts", stall, "stall ok", aborted);
  static const char* const skip[] = {"skip", NULL};
  tt_gpu_run(devices >= 2 ? "a skipped collective times out through NCCL" : "a skipped collective times out, staged", 2,
             120000, "gpu_timeouts", skip, "skip ok", devices >= 2 ? aborted : NULL);
  return tt_gpu_failures == 0 ? 0 : 1;
}
