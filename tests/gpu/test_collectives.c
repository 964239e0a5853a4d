/* Every collective x dtype x op on device buffers, checked value by value (coll_check
 * with --device): at world size 1 through NCCL, and at 2, 3 and 4 ranks, which share
 * the GPU on a one-GPU machine and so go through the staging path (through NCCL where
 * the machine has a GPU per rank). Skips, saying why, without a CUDA device. */
#include <stdio.h>

#include "tests/gpu/gpu_require.h"
#include "tests/gpu/run_ranks.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int devices = tt_require_gpus("gpu.test_collectives", 1);
  static const char* const small[] = {"--device", "--inplace", "--async", "--counts", "0,1,7,70001", NULL};
  static const char* const nccl[] = {"device buffers through NCCL", NULL};
  tt_gpu_run("every collective through NCCL", 1, 300000, "gpu_coll_check", small, ", 0 failures", nccl);
  static const char* const shared[] = {"--device", "--inplace", "--async", "--counts", "0,1,7,5000", NULL};
  static const char* const staged[] = {"staging path", "share GPU", NULL};
  for (int ranks = 2; ranks <= 4; ++ranks) {
    tt_gpu_run(devices >= ranks ? "every collective through NCCL, a GPU per rank"
                                : "every collective through the staging path, ranks sharing a GPU",
               ranks, 300000, "gpu_coll_check", shared, ", 0 failures", devices >= ranks ? nccl : staged);
  }
  return tt_gpu_failures == 0 ? 0 : 1;
}
