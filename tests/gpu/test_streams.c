/* Stream order on device buffers (gpu_streams): a memset before the collective on the
 * same stream, a consumer stream after tutti_work_wait_stream, blocking calls, mixed
 * host and device buffers refused, stated memory kinds; through NCCL on one rank and
 * two ranks (the staging path on a one-GPU machine). Skips, saying why, without a CUDA
 * device. */
#include <stdio.h>

#include "tests/gpu/gpu_require.h"
#include "tests/gpu/run_ranks.h"

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tt_require_gpus("gpu.test_streams", 1);
  for (int ranks = 1; ranks <= 2; ++ranks) {
    tt_gpu_run("stream order", ranks, 120000, "gpu_streams", NULL, "gpu_streams: rank ", NULL);
  }
  return tt_gpu_failures == 0 ? 0 : 1;
}
