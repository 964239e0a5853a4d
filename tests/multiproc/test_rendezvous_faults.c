/* Rendezvous that cannot complete: each must fail with its status and a message that
 * says what and how to fix it, well before the test's own bound, on every rank. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/processes.h"
#include "tests/support/rank_setup.h"

#define RANK_PROGRAM TUTTI_TEST_BINARY_DIR "/tests/programs/rank_report"

static tt_rank_setup setups[4];
static tt_process ranks[4];

/* Starts rank_report with --method tcp://127.0.0.1:port --rank rank --world world, then
 * up to two extra arguments (NULL for none). */
static void start(int slot, int port, int rank, int world, const char* extra1, const char* extra2) {
  tt_rank_setup* setup = &setups[slot];
  tt_setup_init(setup, RANK_PROGRAM);
  tt_setup_arg(setup, "--method");
  tt_setup_arg(setup, "tcp://127.0.0.1:%d", port);
  tt_setup_arg(setup, "--rank");
  tt_setup_arg(setup, "%d", rank);
  tt_setup_arg(setup, "--world");
  tt_setup_arg(setup, "%d", world);
  if (extra1) tt_setup_arg(setup, "%s", extra1);
  if (extra2) tt_setup_arg(setup, "%s", extra2);
  cr_assert_eq(tt_spawn(&ranks[slot], setup->argv, setup->env), 0);
}

/* Every one of the first n processes ended within bound_ms, with exit code 1 and
 * output containing status and fragment (when not NULL). */
static void expect_all_failed(int n, int bound_ms, const char* status, const char* fragment) {
  int ended = tt_wait_all(ranks, n, tt_timeout_ms(bound_ms));
  cr_expect_eq(ended, n, "only %d of %d processes ended within %d ms", ended, n, bound_ms);
  for (int i = 0; i < n; ++i) {
    char* output = tt_output(&ranks[i]);
    cr_expect(ranks[i].exited && ranks[i].exit_code == 1, "process %d should fail with exit 1:\n%s", i, output);
    cr_expect(strstr(output, status) != NULL, "process %d: expected %s in:\n%s", i, status, output);
    if (fragment)
      cr_expect(strstr(output, fragment) != NULL, "process %d: expected \"%s\" in:\n%s", i, fragment, output);
    free(output);
  }
}

static void cleanup(void) { tt_cleanup_all(ranks, 4); }

TestSuite(rendezvous_faults, .fini = cleanup);

Test(rendezvous_faults, missing_rank_times_out_naming_it, .timeout = 60) {
  int port = tt_free_port();
  start(0, port, 0, 3, "--init-timeout", "1500");
  start(1, port, 1, 3, "--init-timeout", "1500");
  expect_all_failed(2, 15000, "TUTTI_ERR_TIMEOUT", "rank 2 never arrived (2 of 3 came)");
}

Test(rendezvous_faults, duplicate_rank_is_refused, .timeout = 60) {
  int port = tt_free_port();
  start(0, port, 0, 3, "--init-timeout", "20000");
  start(1, port, 1, 3, "--init-timeout", "20000");
  start(2, port, 1, 3, "--init-timeout", "20000");
  /* All three stop long before their 20 s timeout: the duplicate tells the others. */
  expect_all_failed(3, 10000, "TUTTI_ERR_INVALID_ARGUMENT", "rank 1 is claimed twice");
}

Test(rendezvous_faults, world_size_mismatch, .timeout = 60) {
  int port = tt_free_port();
  start(0, port, 0, 2, "--init-timeout", "20000");
  start(1, port, 1, 3, "--init-timeout", "20000");
  expect_all_failed(2, 10000, "TUTTI_ERR_MISMATCH", "give every rank the same world size");
}

Test(rendezvous_faults, refused_rendezvous_is_bounded, .timeout = 60) {
  int port = tt_free_port(); /* nobody listens there */
  start(0, port, 1, 2, "--init-timeout", "1000");
  expect_all_failed(1, 10000, "TUTTI_ERR_TRANSPORT", "connection refused");
}

Test(rendezvous_faults, port_in_use_is_reported, .timeout = 60) {
  int port = tt_free_port();
  start(0, port, 0, 2, "--init-timeout", "5000");
  cr_assert(tt_wait_for_port(port, tt_timeout_ms(5000)), "the first rank 0 never listened on %d", port);
  /* A second job's rank 0 on the same port: it cannot serve the store there. */
  start(1, port, 0, 2, "--init-timeout", "5000");
  int ended = tt_wait_all(&ranks[1], 1, tt_timeout_ms(10000));
  cr_assert_eq(ended, 1);
  char* output = tt_output(&ranks[1]);
  cr_expect(strstr(output, "TUTTI_ERR_TRANSPORT") && strstr(output, "pick a free port"),
            "the second rank 0 should say the port is taken:\n%s", output);
  free(output);
}

Test(rendezvous_faults, skipped_split_times_out_naming_the_rank, .timeout = 60) {
  int port = tt_free_port();
  start(0, port, 0, 3, "--op-timeout", "1500");
  start(1, port, 1, 3, "--no-split", NULL);
  start(2, port, 2, 3, "--op-timeout", "1500");
  int ended = tt_wait_all(ranks, 3, tt_timeout_ms(15000));
  cr_expect_eq(ended, 3);
  for (int i = 0; i < 3; i += 2) {
    char* output = tt_output(&ranks[i]);
    cr_expect(strstr(output, "TUTTI_ERR_TIMEOUT") && strstr(output, "ranks 1 never called it"),
              "rank %d should name rank 1 as missing from the split:\n%s", i, output);
    free(output);
  }
}

/* A rank that arrived and then died can never complete the meeting: the others fail at
 * once, naming it, instead of waiting out their init timeout for the ranks still to
 * come (and then lingering for the dead one to depart, which it never does). */
Test(rendezvous_faults, rank_lost_after_arriving_is_named_at_once, .timeout = 90) {
  int port = tt_free_port();
  start(0, port, 0, 3, "--init-timeout", "30000");
  start(1, port, 1, 3, "--init-timeout", "30000");
  cr_assert(tt_wait_for_port(port, tt_timeout_ms(5000)), "rank 0 never listened on %d", port);
  usleep(tt_timeout_ms(2000) * 1000); /* rank 1 claims its rank in a few ms */
  int victim = ranks[1].pid;
  tt_signal(&ranks[1], SIGKILL);
  /* Far less than the 30 s init timeout. */
  int ended = tt_wait_all(ranks, 1, tt_timeout_ms(10000));
  char* output = tt_output(&ranks[0]);
  cr_assert_eq(ended, 1, "rank 0 still waits for the rank that died:\n%s", output);
  char named[64];
  snprintf(named, sizeof named, ":%d) arrived and was then lost", victim);
  cr_expect(ranks[0].exited && ranks[0].exit_code == 1 && strstr(output, "TUTTI_ERR_PEER_LOST") &&
                strstr(output, "rank 1 (") && strstr(output, named) &&
                strstr(output, "rank 2 had not arrived yet (2 of 3 had)"),
            "rank 0 should name rank 1 (pid %d) as lost after arriving, and rank 2 as missing:\n%s", victim, output);
  free(output);
}
