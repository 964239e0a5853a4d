/* What the single-process tests of tutti.h share: a config for a world of one, meeting
 * at a free loopback port with short timeouts; a check of a status and its message;
 * and a clean environment, since each test runs in its own process and the launcher of
 * the test run may have set variables that tutti_comm_init would read. */
#pragma once

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/processes.h"
#include "tutti.h"

static char solo_method[64];

static tutti_config solo_config(void) {
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  snprintf(solo_method, sizeof solo_method, "tcp://127.0.0.1:%d", tt_free_port());
  config.rank = 0;
  config.world_size = 1;
  config.init_method = solo_method;
  config.init_timeout_ms = 5000;
  config.op_timeout_ms = 5000;
  return config;
}

static void expect_error(tutti_status got, tutti_status want, const char* fragment) {
  cr_expect_eq(got, want, "expected %s, got %s: %s", tutti_status_name(want), tutti_status_name(got),
               tutti_last_error());
  cr_expect(strstr(tutti_last_error(), fragment) != NULL, "expected \"%s\" in the last error: %s", fragment,
            tutti_last_error());
}

static void clear_launcher_environment(void) {
  const char* names[] = {
      "TUTTI_RANK",           "TUTTI_WORLD_SIZE",     "TUTTI_ADDR",  "TUTTI_INIT_METHOD", "RANK",
      "WORLD_SIZE",           "MASTER_ADDR",          "MASTER_PORT", "SLURM_PROCID",      "SLURM_NTASKS",
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",    "PMI_SIZE",          "TUTTI_INIT_TIMEOUT_MS",
      "TUTTI_OP_TIMEOUT_MS",  "TUTTI_TRACE"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) unsetenv(names[i]);
}
