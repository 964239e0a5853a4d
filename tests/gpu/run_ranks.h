/* Runs one GPU test program under `tutti launch` and checks what its ranks printed;
 * shared by the GPU test drivers. Prints PASS or FAIL lines; the drivers count them. */
#ifndef TUTTI_TESTS_GPU_RUN_RANKS_H
#define TUTTI_TESTS_GPU_RUN_RANKS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/launch_job.h"

static int tt_gpu_failures;

/* Launches program with `ranks` ranks and args (NULL-terminated), bounded by bound_ms;
 * expects exit 0, no "FAIL", `ok_needle` once per rank and each of `needles`
 * (NULL-terminated; may be NULL) somewhere in the output. */
static inline void tt_gpu_run(const char* name, int ranks, int bound_ms, const char* program, const char* const* args,
                              const char* ok_needle, const char* const* needles) {
  tt_job job;
  memset(&job, 0, sizeof job);
  tt_job_init(&job, ranks, tt_timeout_ms(bound_ms) / 1000 + 5, program);
  for (const char* const* arg = args; arg && *arg; ++arg) tt_job_arg(&job, "%s", *arg);
  tt_job_env(&job, "TUTTI_LOG_LEVEL=info");
  tt_job_run(&job, bound_ms);
  static const char* const shown[] = {"FAIL", "ok", "through", "staging", "SKIP", "tutti launch:", NULL};
  int ok = job.ended && job.process.exit_code == 0 && tt_count(job.output, "FAIL") == 0 &&
           tt_count(job.output, ok_needle) == ranks;
  for (const char* const* needle = needles; ok && needle && *needle; ++needle) ok = strstr(job.output, *needle) != NULL;
  if (ok) {
    printf("PASS %s (-n %d, %lld ms)\n", name, ranks, job.took_ms);
  } else {
    ++tt_gpu_failures;
    printf("FAIL %s (-n %d): ended %d, exit %d, %d of %d ranks said \"%s\"; %s\n%s\n", name, ranks, job.ended,
           job.process.exit_code, tt_count(job.output, ok_needle), ranks, ok_needle, tt_job_command(&job),
           tt_excerpt(job.output, shown));
    for (const char* const* needle = needles; needle && *needle; ++needle) {
      if (!strstr(job.output, *needle)) printf("  missing: \"%s\"\n", *needle);
    }
  }
  tt_job_cleanup(&job);
}

#endif
