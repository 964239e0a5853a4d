/* Worlds of 1, 2, 3, 4 and 8 real processes meeting through each init method and each
 * launcher's variables: every rank must learn its place and its place in a split. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/launch_job.h"
#include "tests/support/processes.h"
#include "tests/support/rank_setup.h"

#define RANK_PROGRAM TUTTI_TEST_BINARY_DIR "/tests/programs/rank_report"
#define MAX_RANKS 8
typedef void (*method_fn)(tt_rank_setup* setup, int rank, int n, int port, const char* dir);

static void tcp_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)dir;
  tt_setup_arg(s, "--method");
  tt_setup_arg(s, "tcp://127.0.0.1:%d", port);
  tt_setup_arg(s, "--rank");
  tt_setup_arg(s, "%d", rank);
  tt_setup_arg(s, "--world");
  tt_setup_arg(s, "%d", n);
}

static void file_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)port;
  tt_setup_arg(s, "--method");
  tt_setup_arg(s, "file://%s/rendezvous", dir);
  tt_setup_arg(s, "--rank");
  tt_setup_arg(s, "%d", rank);
  tt_setup_arg(s, "--world");
  tt_setup_arg(s, "%d", n);
  tt_setup_env(s, "TUTTI_HOST=127.0.0.1");
}

static void tutti_env_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)dir;
  tt_setup_env(s, "TUTTI_RANK=%d", rank);
  tt_setup_env(s, "TUTTI_WORLD_SIZE=%d", n);
  tt_setup_env(s, "TUTTI_ADDR=127.0.0.1:%d", port);
}

static void torch_env_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)dir;
  tt_setup_env(s, "RANK=%d", rank);
  tt_setup_env(s, "WORLD_SIZE=%d", n);
  tt_setup_env(s, "LOCAL_RANK=%d", rank);
  tt_setup_env(s, "MASTER_ADDR=127.0.0.1");
  /* MASTER_PORT is torch's store's; tutti's listens on the port after it, the free one. */
  tt_setup_env(s, "MASTER_PORT=%d", port - 1);
}

static void slurm_env_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)dir;
  tt_setup_slurm_env(s, rank, n, port);
}

static void openmpi_env_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)dir;
  tt_setup_openmpi_env(s, rank, n, port);
}

static void pmi_env_method(tt_rank_setup* s, int rank, int n, int port, const char* dir) {
  (void)dir;
  tt_setup_env(s, "PMI_RANK=%d", rank);
  tt_setup_env(s, "PMI_SIZE=%d", n);
  tt_setup_env(s, "TUTTI_ADDR=127.0.0.1:%d", port);
}

/* Where world rank `rank` lands in the even/odd split ordered by descending rank. */
static void expected_split(int rank, int n, int* half_rank, int* half_size) {
  *half_rank = 0;
  *half_size = 0;
  for (int other = 0; other < n; ++other) {
    if (other % 2 != rank % 2) continue;
    ++*half_size;
    if (other > rank) ++*half_rank;
  }
}

static void run_world(method_fn method, int n) {
  static tt_rank_setup setups[MAX_RANKS];
  tt_process ranks[MAX_RANKS];
  char dir[] = "/tmp/tutti-test-rdzv-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  int port = tt_free_port();
  for (int rank = 0; rank < n; ++rank) {
    tt_rank_setup* setup = &setups[rank];
    tt_setup_init(setup, RANK_PROGRAM);
    method(setup, rank, n, port, dir);
    cr_assert_eq(tt_spawn(&ranks[rank], setup->argv, setup->env), 0);
  }
  int ended = tt_wait_all(ranks, n, tt_timeout_ms(30000));
  for (int rank = 0; rank < n; ++rank) {
    char* output = tt_output(&ranks[rank]);
    char place[96], split[96];
    int half_rank, half_size;
    expected_split(rank, n, &half_rank, &half_size);
    snprintf(place, sizeof place, "PLACE rank=%d size=%d local=%d/%d node=0", rank, n, rank, n);
    snprintf(split, sizeof split, "SPLIT color=%d rank=%d size=%d", rank % 2, half_rank, half_size);
    cr_expect(ranks[rank].exited && ranks[rank].exit_code == 0, "rank %d of %d did not exit 0 (ended %d):\n%s", rank, n,
              ended, output);
    cr_expect(strstr(output, place) != NULL, "rank %d of %d: expected \"%s\" in:\n%s", rank, n, place, output);
    cr_expect(strstr(output, split) != NULL, "rank %d of %d: expected \"%s\" in:\n%s", rank, n, split, output);
    free(output);
  }
  tt_cleanup_all(ranks, n);
  char path[64];
  snprintf(path, sizeof path, "%s/rendezvous", dir);
  cr_expect_eq(access(path, F_OK), -1, "rank 0 should remove the rendezvous file %s when it leaves", path);
  unlink(path);
  rmdir(dir);
}

static void run_sizes(method_fn method) {
  const int sizes[] = {1, 2, 3, 4, 8};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) run_world(method, sizes[i]);
}

Test(init_methods, tcp, .timeout = 180) { run_sizes(tcp_method); }
Test(init_methods, file, .timeout = 180) { run_sizes(file_method); }
Test(init_methods, env_tutti_variables, .timeout = 180) { run_sizes(tutti_env_method); }
Test(init_methods, env_torch_variables, .timeout = 180) { run_sizes(torch_env_method); }
Test(init_methods, env_slurm_variables, .timeout = 180) { run_sizes(slurm_env_method); }
Test(init_methods, env_openmpi_variables, .timeout = 180) { run_sizes(openmpi_env_method); }
Test(init_methods, env_pmi_variables, .timeout = 180) { run_sizes(pmi_env_method); }

/* The same worlds under tutti launch: env:// with the launcher serving the store. */
static void run_launched_world(int n) {
  tt_rank_setup setup;
  tt_setup_init(&setup, TUTTI_TEST_LAUNCHER);
  tt_setup_arg(&setup, "launch");
  tt_setup_arg(&setup, "-n");
  tt_setup_arg(&setup, "%d", n);
  tt_setup_arg(&setup, "--timeout");
  tt_setup_arg(&setup, "60");
  tt_setup_arg(&setup, "--");
  tt_setup_arg(&setup, "%s", RANK_PROGRAM);
  tt_process launcher;
  cr_assert_eq(tt_spawn(&launcher, setup.argv, setup.env), 0);
  int ended = tt_wait(&launcher, tt_timeout_ms(60000));
  char* output = tt_output(&launcher);
  cr_expect(ended && launcher.exit_code == 0, "tutti launch -n %d did not exit 0:\n%s", n, output);
  for (int rank = 0; rank < n; ++rank) {
    char place[96], split[96];
    int half_rank, half_size;
    expected_split(rank, n, &half_rank, &half_size);
    snprintf(place, sizeof place, "[%d] PLACE rank=%d size=%d local=%d/%d node=0", rank, rank, n, rank, n);
    snprintf(split, sizeof split, "[%d] SPLIT color=%d rank=%d size=%d", rank, rank % 2, half_rank, half_size);
    cr_expect(strstr(output, place) != NULL, "expected \"%s\" in:\n%s", place, output);
    cr_expect(strstr(output, split) != NULL, "expected \"%s\" in:\n%s", split, output);
  }
  free(output);
  tt_cleanup(&launcher);
}

Test(init_methods, tutti_launch, .timeout = 300) {
  const int sizes[] = {1, 2, 3, 4, 8};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) run_launched_world(sizes[i]);
}

/* Rank 0 serving the store without TUTTI_SECRET says once that anyone on the machine
 * can join; with the secret set on every rank, nobody says it. */
Test(init_methods, a_store_served_without_a_secret_says_so_once, .timeout = 60) {
  for (int with_secret = 0; with_secret <= 1; ++with_secret) {
    tt_rank_setup setups[3];
    tt_process ranks[3];
    int port = tt_free_port();
    for (int rank = 0; rank < 3; ++rank) {
      tt_setup_init(&setups[rank], RANK_PROGRAM);
      tcp_method(&setups[rank], rank, 3, port, NULL);
      tt_setup_arg(&setups[rank], "--no-split");
      if (with_secret) tt_setup_env(&setups[rank], "TUTTI_SECRET=0123456789abcdef0123456789abcdef");
      cr_assert_eq(tt_spawn(&ranks[rank], setups[rank].argv, setups[rank].env), 0);
    }
    tt_wait_all(ranks, 3, tt_timeout_ms(30000));
    for (int rank = 0; rank < 3; ++rank) {
      char* output = tt_output(&ranks[rank]);
      const int warnings = tt_count(output, "without TUTTI_SECRET, so any user of this machine can join this job");
      cr_expect(ranks[rank].exited && ranks[rank].exit_code == 0, "rank %d:\n%s", rank, output);
      cr_expect_eq(warnings, !with_secret && rank == 0, "rank %d, %s secret: %d warnings:\n%s", rank,
                   with_secret ? "with a" : "without", warnings, output);
      free(output);
    }
    tt_cleanup_all(ranks, 3);
  }
}

/* Rank 0 hosts the store, so its destroy waits for the others to leave; a wait past
 * two seconds says so on stderr, naming the rank it waits for, rather than hanging
 * silently for up to the init timeout. */
Test(init_methods, the_store_host_says_whom_its_destroy_waits_for, .timeout = 60) {
  tt_rank_setup setups[2];
  tt_process ranks[2];
  int port = tt_free_port();
  for (int rank = 0; rank < 2; ++rank) {
    tt_setup_init(&setups[rank], RANK_PROGRAM);
    tcp_method(&setups[rank], rank, 2, port, NULL);
    tt_setup_arg(&setups[rank], "--no-split");
    tt_setup_arg(&setups[rank], "--linger-ms");
    tt_setup_arg(&setups[rank], rank == 0 ? "0" : "3500");
    cr_assert_eq(tt_spawn(&ranks[rank], setups[rank].argv, setups[rank].env), 0);
  }
  tt_wait_all(ranks, 2, tt_timeout_ms(30000));
  char* output = tt_output(&ranks[0]);
  cr_expect(ranks[0].exited && ranks[0].exit_code == 0 && ranks[1].exited && ranks[1].exit_code == 0, "%s", output);
  cr_expect(
      strstr(output,
             "this rank hosts the rendezvous store (or its node's relay), so its tutti_comm_destroy waits (up to ") !=
              NULL &&
          strstr(output, "for ranks 1 to leave before closing the store") != NULL,
      "rank 0 did not say whom it waits for:\n%s", output);
  long long destroy_ms = -1;
  const char* line = strstr(output, "DESTROYED after ");
  if (line != NULL) destroy_ms = atoll(line + strlen("DESTROYED after "));
  cr_expect(destroy_ms >= 3000, "rank 0's destroy took %lld ms; it should wait for rank 1:\n%s", destroy_ms, output);
  free(output);
  tt_cleanup_all(ranks, 2);
}

/* Starts 3 ranks over tcp:// of which rank 2 lacks the job's secret, with these init
 * timeout and wait report settings. */
static void start_with_rank_2_denied(tt_process ranks[3], int init_timeout_ms, int wait_report_ms) {
  tt_rank_setup setups[3];
  int port = tt_free_port();
  for (int rank = 0; rank < 3; ++rank) {
    tt_setup_init(&setups[rank], RANK_PROGRAM);
    tcp_method(&setups[rank], rank, 3, port, NULL);
    tt_setup_arg(&setups[rank], "--no-split");
    tt_setup_env(&setups[rank], "TUTTI_SECRET=%s", rank == 2 ? "not-the-job-secret" : "0123456789abcdef");
    tt_setup_env(&setups[rank], "TUTTI_WAIT_REPORT_MS=%d", wait_report_ms);
    tt_setup_env(&setups[rank], "TUTTI_INIT_TIMEOUT_MS=%d", init_timeout_ms);
    cr_assert_eq(tt_spawn(&ranks[rank], setups[rank].argv, setups[rank].env), 0);
    if (rank == 0) tt_wait_for_port(port, tt_timeout_ms(10000));
  }
}

/* A rank denied with a long init timeout: once no rank has arrived for 5 s with a
 * denial made since the meeting began, rank 0 ends the meeting on every rank with
 * TUTTI_ERR_DENIED, naming the rank that never arrived and the denial, well before the
 * 60 s timeout. */
Test(init_methods, a_rank_denied_at_the_rendezvous_ends_the_meeting_once_arrivals_stall, .timeout = 90) {
  tt_process ranks[3];
  start_with_rank_2_denied(ranks, 60000, 10000);
  /* Named by pid: on the store's machine it came through the store's Unix socket. */
  char denied[96];
  snprintf(denied, sizeof denied, "the store denied the connection from local pid %d:", (int)ranks[2].pid);
  tt_wait_all(ranks, 3, tt_timeout_ms(45000));
  for (int rank = 0; rank < 2; ++rank) {
    char* output = tt_output(&ranks[rank]);
    cr_expect(ranks[rank].exited && ranks[rank].exit_code != 0, "rank %d should fail:\n%s", rank, output);
    cr_expect(strstr(output, "ERROR TUTTI_ERR_DENIED init: tutti_comm_init: rank 0 gave up at the rendezvous") != NULL,
              "rank %d:\n%s", rank, output);
    cr_expect(strstr(output, "rank 2 never arrived (2 of 3 came), and none has come for ") != NULL &&
                  strstr(output, denied) != NULL && strstr(output, "give every rank the same TUTTI_SECRET") != NULL,
              "rank %d should name the missing rank and the denial:\n%s", rank, output);
    cr_expect((rank == 1) == (strstr(output, "(reported by another rank)") != NULL), "rank %d:\n%s", rank, output);
    free(output);
  }
  char* output = tt_output(&ranks[2]);
  cr_expect(ranks[2].exited && ranks[2].exit_code != 0 && strstr(output, "DENIED") != NULL, "rank 2:\n%s", output);
  free(output);
  tt_cleanup_all(ranks, 3);
}

/* A rank without the job's secret is denied before it can claim its rank: the others'
 * wait says, at TUTTI_WAIT_REPORT_MS, which rank has not arrived and that the store
 * denied a connection, and so does their timeout; the denied rank says why itself. */
Test(init_methods, a_rank_denied_at_the_rendezvous_is_named_while_the_others_wait, .timeout = 60) {
  tt_process ranks[3];
  start_with_rank_2_denied(ranks, tt_timeout_ms(2500), 500);
  /* Named by pid: on the store's machine it came through the store's Unix socket. */
  char denied[96];
  snprintf(denied, sizeof denied, "the store denied the connection from local pid %d:", (int)ranks[2].pid);
  tt_wait_all(ranks, 3, tt_timeout_ms(30000));
  for (int rank = 0; rank < 3; ++rank) {
    char* output = tt_output(&ranks[rank]);
    cr_expect(ranks[rank].exited && ranks[rank].exit_code != 0, "rank %d should fail:\n%s", rank, output);
    if (rank == 2) {
      cr_expect(strstr(output, "DENIED") != NULL || strstr(output, "denied") != NULL, "rank 2:\n%s", output);
    } else {
      cr_expect(strstr(output, "has waited 500 ms at the rendezvous") != NULL &&
                    strstr(output, "for rank 2 to arrive (2 of 3 came)") != NULL,
                "rank %d did not say whom it waits for:\n%s", rank, output);
      cr_expect(tt_count(output, denied) >= 2, "rank %d's report and timeout should name the denial:\n%s", rank,
                output);
      cr_expect(strstr(output, "rank 2 never arrived (2 of 3 came)") != NULL, "rank %d:\n%s", rank, output);
    }
    free(output);
  }
  tt_cleanup_all(ranks, 3);
}
