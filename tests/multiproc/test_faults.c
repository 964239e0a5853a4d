/* Real faults in running jobs (coll_fault): a rank killed in the middle of a small or a
 * large all_reduce, a rank stopped with SIGSTOP, a rank that computes past the
 * heartbeat timeout, and the rank that hosts the store dying or frozen. Every survivor
 * must get TUTTI_ERR_PEER_LOST naming the lost rank (host and pid), long before the
 * operation's own timeout; the time from the fault to the last survivor's error is
 * printed, not asserted beyond that (speed is for benchmarks). Jobs run under tutti launch
 * --keep-going, so the survivors outlive the victim, and are bounded and cleaned up
 * by tt_job / tt_cleanup_all. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/launch_job.h"
#include "tests/support/processes.h"
#include "tests/support/rank_setup.h"

/* Far beyond any detection time here, so an error that waited for it is caught. */
#define OP_TIMEOUT_MS 60000

static tt_job job;
static tt_process ranks[3];
static tt_rank_setup setups[3];

static void cleanup(void) {
  tt_job_cleanup(&job);
  tt_cleanup_all(ranks, 3);
}

TestSuite(faults, .fini = cleanup);

static const char* const kNeedles[] = {"LOST",   "DYING", "RESUMED", "DONE",         "SHRUNK",   "SURVIVED",
                                       "SHRINK", "FAIL",  "WARN",    "tutti launch", "RECEIVED", NULL};

/* Starts coll_fault --case name under tutti launch --keep-going with world ranks, on
 * `nodes` emulated nodes unless 0, with the variables in `extra` ("NAME=value", several
 * separated by spaces) unless NULL. */
static void run_job_on(int nodes, const char* extra, int world, const char* name, int victim, long long count,
                       int heartbeat_timeout_ms, int heartbeat_interval_ms, long long compute_ms, int shrink) {
  tt_job_init(&job, world, 120, "coll_fault");
  tt_job_launcher_option(&job, "--keep-going");
  tt_job_nodes(&job, nodes);
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "%s", name);
  tt_job_arg(&job, "--victim");
  tt_job_arg(&job, "%d", victim);
  tt_job_arg(&job, "--count");
  tt_job_arg(&job, "%lld", count);
  tt_job_arg(&job, "--compute-ms");
  tt_job_arg(&job, "%lld", compute_ms);
  tt_job_arg(&job, "--shrink");
  tt_job_arg(&job, "%d", shrink);
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=%d", OP_TIMEOUT_MS);
  tt_job_env(&job, "TUTTI_HEARTBEAT_TIMEOUT_MS=%d", heartbeat_timeout_ms);
  tt_job_env(&job, "TUTTI_HEARTBEAT_INTERVAL_MS=%d", heartbeat_interval_ms);
  /* extra may hold several, separated by spaces. */
  char variables[256];
  snprintf(variables, sizeof variables, "%s", extra ? extra : "");
  char* rest = NULL;
  for (char* variable = strtok_r(variables, " ", &rest); variable; variable = strtok_r(NULL, " ", &rest)) {
    tt_job_env(&job, "%s", variable);
  }
  cr_assert(tt_job_run(&job, 100000), "%s did not end within 100 s:\n%s", tt_job_command(&job),
            tt_excerpt(job.output, kNeedles));
}

static void run_job(int world, const char* name, int victim, long long count, int heartbeat_timeout_ms,
                    int heartbeat_interval_ms, long long compute_ms, int shrink) {
  run_job_on(0, NULL, world, name, victim, count, heartbeat_timeout_ms, heartbeat_interval_ms, compute_ms, shrink);
}

/* Every rank but the victim printed "LOST <ms> TUTTI_ERR_PEER_LOST <message>" naming
 * the victim; returns the latest survivor's time minus the victim's DYING time. */
static long long expect_survivors_lost(int world, int victim, const char* fragment) {
  char line[4096];
  cr_assert(tt_rank_line(job.output, victim, "DYING ", line, sizeof line), "the victim never got to its fault:\n%s",
            tt_excerpt(job.output, kNeedles));
  long long dying_ms = atoll(line);
  long long last_ms = 0;
  char naming[64];
  snprintf(naming, sizeof naming, "rank %d (host ", victim);
  for (int rank = 0; rank < world; ++rank) {
    if (rank == victim) continue;
    cr_assert(tt_rank_line(job.output, rank, "LOST ", line, sizeof line), "rank %d never saw the loss:\n%s", rank,
              tt_excerpt(job.output, kNeedles));
    long long at_ms = atoll(line);
    if (at_ms > last_ms) last_ms = at_ms;
    cr_expect(strstr(line, "TUTTI_ERR_PEER_LOST") != NULL, "rank %d: %s", rank, line);
    cr_expect(strstr(line, fragment ? fragment : naming) != NULL, "rank %d does not say \"%s\": %s", rank,
              fragment ? fragment : naming, line);
    if (!fragment) cr_expect(strstr(line, ", pid ") != NULL, "rank %d does not give the pid: %s", rank, line);
    /* "all_reduce #N" when the loss ended the operation, "tutti_all_reduce: comm ... is
     * unusable" when a slow rank (8 ranks on 2 cores) issued it after the loss was known
     * (seen once in CI): either way the operation is named. */
    cr_expect(strstr(line, "all_reduce #") != NULL || strstr(line, "tutti_all_reduce: comm ") != NULL,
              "rank %d does not name its operation: %s", rank, line);
  }
  return last_ms - dying_ms;
}

static void kill_during_all_reduce(int world, long long count) {
  int victim = world / 2;
  run_job(world, "kill", victim, count, 20000, 1000, 0, 0);
  long long took = expect_survivors_lost(world, victim, NULL);
  cr_expect(took < OP_TIMEOUT_MS / 2, "the survivors waited %lld ms, as if for the operation's timeout", took);
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "%s", tt_excerpt(job.output, kNeedles));
  printf(
      "faults: kill -9 of rank %d of %d during an all_reduce of %lld floats: last survivor's PEER_LOST %lld ms "
      "after the kill\n",
      victim, world, count, took);
}

Test(faults, kill_during_small_all_reduce_2, .timeout = 150) { kill_during_all_reduce(2, 1); }
Test(faults, kill_during_small_all_reduce_4, .timeout = 150) { kill_during_all_reduce(4, 1); }
Test(faults, kill_during_small_all_reduce_8, .timeout = 150) { kill_during_all_reduce(8, 1); }
Test(faults, kill_during_large_all_reduce_2, .timeout = 150) { kill_during_all_reduce(2, 4 << 20); }
Test(faults, kill_during_large_all_reduce_4, .timeout = 150) { kill_during_all_reduce(4, 4 << 20); }
Test(faults, kill_during_large_all_reduce_8, .timeout = 150) { kill_during_all_reduce(8, 1 << 20); }

/* Every survivor but `also_gone` (-1: none) shrank to the ranks left and passed 50
 * checked all_reduces there. */
static void expect_survivors_shrank(int world, int victim, int also_gone) {
  char line[256];
  int left = world - 1 - (also_gone >= 0);
  for (int rank = 0; rank < world; ++rank) {
    if (rank == victim || rank == also_gone) continue;
    cr_expect(tt_rank_line(job.output, rank, "SHRUNK ", line, sizeof line) && atoi(line) == left,
              "rank %d did not shrink to %d ranks:\n%s", rank, left, tt_excerpt(job.output, kNeedles));
    cr_expect(tt_rank_line(job.output, rank, "SURVIVED 50", line, sizeof line),
              "rank %d failed on the survivors' communicator:\n%s", rank, tt_excerpt(job.output, kNeedles));
  }
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "%s", tt_excerpt(job.output, kNeedles));
}

Test(faults, survivors_of_a_kill_shrink_and_go_on, .timeout = 150) {
  run_job(4, "kill", 2, 1000, 20000, 1000, 0, 1);
  expect_survivors_lost(4, 2, NULL);
  expect_survivors_shrank(4, 2, -1);
}

/* Between emulated nodes (tutti launch --nodes 2: UCX between them, shared memory within
 * each): a rank of the second node killed during a small all_reduce and during a large
 * one, which the hierarchy carries (shared memory within the nodes, UCX between them:
 * every rank's log says its world has one, and whether its 4 ranks have a CPU each,
 * as the CPUs this test may run on say; the selector's test that 4 MiB takes it), is
 * named by every survivor, on its node and on the other, which then shrink to the three
 * left (no hierarchy: 2 + 1) and go on. */
static void kill_between_nodes(long long count) {
  run_job_on(2, "TUTTI_LOG_LEVEL=info", 4, "kill", 3, count, 20000, 1000, 0, 1);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  cr_assert_eq(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  char layout[128];
  snprintf(layout, sizeof layout, "hierarchical where that is faster (2 nodes of 2 ranks, %s)",
           CPU_COUNT(&cpus) >= 4 ? "a CPU per rank" : "ranks sharing CPUs");
  cr_expect_eq(tt_count(job.output, layout), 4, "not every rank's world said \"%s\":\n%s", layout,
               tt_excerpt(job.output, kNeedles));
  long long took = expect_survivors_lost(4, 3, NULL);
  cr_expect(took < OP_TIMEOUT_MS / 2, "the survivors waited %lld ms, as if for the operation's timeout", took);
  expect_survivors_shrank(4, 3, -1);
  printf(
      "faults: kill -9 of rank 3 of 4 on 2 emulated nodes during an all_reduce of %lld floats: last survivor's "
      "PEER_LOST %lld ms after the kill\n",
      count, took);
}

Test(faults, kill_between_nodes_during_small_all_reduce, .timeout = 150) { kill_between_nodes(1); }
Test(faults, kill_between_nodes_during_hierarchical_all_reduce, .timeout = 150) { kill_between_nodes(1 << 20); }

/* The same kill behind node relays (TUTTI_RELAY=on: each node's local rank 0 serves a
 * relay its node's ranks reach the store through): rank 3's relay sees it go and
 * writes its loss to the store, where every survivor reads it, and the survivors
 * shrink through their relays. */
Test(faults, kill_behind_a_node_relay, .timeout = 150) {
  run_job_on(2, "TUTTI_RELAY=on TUTTI_LOG_LEVEL=info", 4, "kill", 3, 1, 20000, 1000, 0, 1);
  cr_expect_eq(tt_count(job.output, "INFO: rendezvous relay on 127.0.0.1:"), 2,
               "not one relay per node, so the loss did not go through one:\n%s", tt_excerpt(job.output, kNeedles));
  long long took = expect_survivors_lost(4, 3, NULL);
  cr_expect(took < OP_TIMEOUT_MS / 2, "the survivors waited %lld ms, as if for the operation's timeout", took);
  expect_survivors_shrank(4, 3, -1);
}

/* Behind a relay of relays (TUTTI_RELAY_GROUP=2: node 0's relay stands in front of the
 * store for node 1's): node 1's relay sees rank 3 go and writes its loss through node
 * 0's, and the survivors, on all four nodes, name it and shrink. */
Test(faults, kill_behind_a_relay_of_relays, .timeout = 150) {
  run_job_on(4, "TUTTI_RELAY=on TUTTI_RELAY_GROUP=2 TUTTI_HOST=127.0.0.1 TUTTI_LOG_LEVEL=info", 8, "kill", 3, 1, 20000,
             1000, 0, 1);
  cr_expect_eq(tt_count(job.output, "INFO: rendezvous relay on 127.0.0.1:"), 4, "not one relay per node:\n%s",
               tt_excerpt(job.output, kNeedles));
  char store[64];
  cr_assert(tt_launcher_store(job.output, store, sizeof store), "%s", tt_excerpt(job.output, kNeedles));
  char in_front[96];
  snprintf(in_front, sizeof in_front, "in front of %s\n", store);
  cr_expect_eq(tt_count(job.output, in_front), 2, "not one relay per group in front of the store at %s:\n%s", store,
               tt_excerpt(job.output, kNeedles));
  long long took = expect_survivors_lost(8, 3, NULL);
  cr_expect(took < OP_TIMEOUT_MS / 2, "the survivors waited %lld ms, as if for the operation's timeout", took);
  expect_survivors_shrank(8, 3, -1);
}

/* The shrink's leader (rank 0, first to arrive) dies while it waits for the last
 * survivor: the others see it lost, elect another leader and shrink without it. */
Test(faults, shrink_survives_the_loss_of_its_leader, .timeout = 150) {
  run_job(4, "kill", 1, 1000, 20000, 1000, 0, 2);
  expect_survivors_lost(4, 1, NULL);
  char line[256];
  cr_assert(tt_rank_line(job.output, 0, "LEADER_DYING", line, sizeof line), "%s", tt_excerpt(job.output, kNeedles));
  expect_survivors_shrank(4, 1, 0);
}

/* SIGSTOP: the survivors learn within the heartbeat timeout (and not before it), and
 * shrink; the victim, continued while they run on, finds itself declared lost, cannot
 * join them, and does not disturb them. */
Test(faults, stopped_rank_is_lost_after_the_heartbeat_timeout, .timeout = 150) {
  const int timeout_ms = 2000;
  run_job(3, "stop", 1, 1, timeout_ms, 200, 0, 1);
  long long took = expect_survivors_lost(3, 1, "rank 1 (host ");
  cr_expect(strstr(job.output, "it sent nothing to the store for") != NULL, "%s", tt_excerpt(job.output, kNeedles));
  cr_expect(took >= timeout_ms - 100, "declared lost after %lld ms, before the %d ms timeout", took, timeout_ms);
  cr_expect(took < timeout_ms + 10000, "declared lost only after %lld ms (timeout %d ms)", took, timeout_ms);
  char line[4096];
  cr_assert(tt_rank_line(job.output, 1, "RESUMED TUTTI_ERR_PEER_LOST", line, sizeof line),
            "the continued victim did not report its own loss:\n%s", tt_excerpt(job.output, kNeedles));
  cr_expect(strstr(line, "this rank was declared lost") != NULL, "%s", line);
  cr_expect(tt_rank_line(job.output, 1, "SHRINK TUTTI_ERR_PEER_LOST", line, sizeof line),
            "the continued victim's shrink did not fail:\n%s", tt_excerpt(job.output, kNeedles));
  expect_survivors_shrank(3, 1, -1);
  cr_expect(job.process.exited && job.process.exit_code == 0, "%s", tt_excerpt(job.output, kNeedles));
  printf("faults: SIGSTOP of rank 1 of 3, heartbeat timeout %d ms: last survivor's PEER_LOST %lld ms after the stop\n",
         timeout_ms, took);
}

/* Heartbeats come from the event loop's thread: computing for 4 heartbeat timeouts
 * without calling tutti is no loss. */
Test(faults, rank_computing_past_the_heartbeat_timeout_is_not_lost, .timeout = 150) {
  run_job(3, "compute", 2, 1, 1500, 300, 6000, 0);
  cr_expect_eq(tt_count(job.output, "DONE 10"), 3, "%s", tt_excerpt(job.output, kNeedles));
  cr_expect_eq(tt_count(job.output, "LOST"), 0, "%s", tt_excerpt(job.output, kNeedles));
  cr_expect_eq(tt_count(job.output, "is lost"), 0, "%s", tt_excerpt(job.output, kNeedles));
  cr_expect(job.process.exited && job.process.exit_code == 0, "%s", tt_excerpt(job.output, kNeedles));
}

/* Rank `rank` of 3, started by hand as srun or mpirun would start it (tcp://, rank 0
 * hosting the store on port), running coll_fault --case fault_case with rank 0 as the
 * victim; the caller adds its own arguments and variables, then spawns it. */
static tt_rank_setup* by_hand(int rank, int port, const char* fault_case) {
  tt_rank_setup* setup = &setups[rank];
  tt_setup_init(setup, TUTTI_TEST_BINARY_DIR "/tests/programs/coll_fault");
  tt_setup_arg(setup, "--case");
  tt_setup_arg(setup, "%s", fault_case);
  tt_setup_arg(setup, "--victim");
  tt_setup_arg(setup, "0");
  tt_setup_env(setup, "TUTTI_INIT_METHOD=tcp://127.0.0.1:%d", port);
  tt_setup_env(setup, "TUTTI_RANK=%d", rank);
  tt_setup_env(setup, "TUTTI_WORLD_SIZE=3");
  tt_setup_env(setup, "TUTTI_OP_TIMEOUT_MS=%d", OP_TIMEOUT_MS);
  return setup;
}

/* Without a launcher, rank 0 hosts the store: when it dies, the others fail with
 * PEER_LOST saying that the store, hosted by rank 0, is gone. */
Test(faults, death_of_the_rank_hosting_the_store_is_named, .timeout = 150) {
  int port = tt_free_port();
  for (int rank = 0; rank < 3; ++rank) {
    tt_rank_setup* setup = by_hand(rank, port, "kill");
    cr_assert_eq(tt_spawn(&ranks[rank], setup->argv, setup->env), 0);
  }
  int ended = tt_wait_all(ranks, 3, tt_timeout_ms(60000));
  cr_assert_eq(ended, 3, "only %d of 3 ranks ended", ended);
  cr_expect(ranks[0].signaled == 9, "rank 0 should have killed itself");
  for (int rank = 1; rank < 3; ++rank) {
    char* output = tt_output(&ranks[rank]);
    cr_expect(ranks[rank].exited && ranks[rank].exit_code == 0, "rank %d:\n%s", rank, output);
    cr_expect(strstr(output, "LOST") && strstr(output, "TUTTI_ERR_PEER_LOST"), "rank %d:\n%s", rank, output);
    cr_expect(strstr(output, "the rendezvous store at 127.0.0.1:") && strstr(output, "hosted by rank 0, is lost"),
              "rank %d does not say the store's host is gone:\n%s", rank, output);
    free(output);
  }
}

/* Copies the first line of text that starts with prefix into line; "" if none. */
static const char* line_starting(const char* text, const char* prefix, char* line, size_t size) {
  line[0] = '\0';
  for (const char* at = text; at; at = strchr(at, '\n')) {
    if (*at == '\n') ++at;
    if (strncmp(at, prefix, strlen(prefix)) == 0) {
      snprintf(line, size, "%.*s", (int)strcspn(at, "\n"), at);
      break;
    }
  }
  return line;
}

/* Rank 0 hosts the store and is frozen (SIGSTOP) for 3 s, past the 2 s heartbeat
 * timeout, in the middle of 16 MiB all_reduces (coll_fault cut, no cut made). The
 * others rightly give up on the store. Rank 0, continued, must say that it and its
 * store were frozen, and not blame ranks whose heartbeats sat unread in its sockets. */
Test(faults, frozen_store_host_blames_itself_not_the_others, .timeout = 150) {
  int port = tt_free_port();
  for (int rank = 0; rank < 3; ++rank) {
    tt_rank_setup* setup = by_hand(rank, port, "cut");
    tt_setup_arg(setup, "--count");
    tt_setup_arg(setup, "%d", 4 << 20);
    tt_setup_env(setup, "TUTTI_HEARTBEAT_TIMEOUT_MS=2000");
    tt_setup_env(setup, "TUTTI_HEARTBEAT_INTERVAL_MS=200");
    cr_assert_eq(tt_spawn(&ranks[rank], setup->argv, setup->env), 0);
  }
  /* Rank 0 says when it is 200 rounds in: every rank is then exchanging data. */
  int running = 0;
  for (int waited = 0; waited < tt_timeout_ms(60000) && !running; waited += 20) {
    char* output = tt_output(&ranks[0]);
    running = strstr(output, "CUTTABLE ") != NULL;
    free(output);
    if (!running && tt_wait_all(ranks, 3, 0) > 0) break;
    if (!running) usleep(20000);
  }
  cr_assert(running, "the ranks never got 200 rounds in");
  tt_signal(&ranks[0], SIGSTOP);
  usleep(3000 * 1000);
  tt_signal(&ranks[0], SIGCONT);

  int ended = tt_wait_all(ranks, 3, tt_timeout_ms(60000));
  cr_assert_eq(ended, 3, "only %d of 3 ranks ended", ended);
  for (int rank = 0; rank < 3; ++rank) {
    char* output = tt_output(&ranks[rank]);
    char line[4096];
    const char* lost = line_starting(output, "LOST ", line, sizeof line);
    cr_expect(strstr(lost, "TUTTI_ERR_PEER_LOST"), "rank %d:\n%s", rank, output);
    cr_expect(ranks[rank].exited && ranks[rank].exit_code == 0, "rank %d:\n%s", rank, output);
    if (rank == 0) {
      cr_expect(strstr(lost, "this rank was declared lost") &&
                    strstr(lost, "which serves the rendezvous store, was frozen for"),
                "rank 0 does not say that it and its store were frozen:\n%s", output);
      cr_expect(strstr(output, "sent nothing to the store") == NULL,
                "rank 0's store blamed ranks for the silence it caused:\n%s", output);
    } else {
      /* Or, on a machine so slow that they had not given up yet, the store's verdict. */
      cr_expect(
          strstr(lost, "hosted by rank 0, is lost") || strstr(lost, "which serves the rendezvous store, was frozen"),
          "rank %d does not blame the store:\n%s", rank, output);
    }
    free(output);
  }
}

/* A message sent right before its sender ended is received (coll_fault last_message):
 * the receiver learns of the end in the same wake-up as of the message, and of the end
 * first. Whether it does depends on where SIGSTOP finds rank 0, so the case runs 5
 * times; before the fix, the first run lost the message in 3 tries of 3. */
Test(faults, message_sent_before_the_sender_ended_is_received, .timeout = 150) {
  for (int run = 0; run < 5; ++run) {
    tt_job_cleanup(&job);
    tt_job_init(&job, 2, 60, "coll_fault");
    tt_job_launcher_option(&job, "--keep-going");
    tt_job_arg(&job, "--case");
    tt_job_arg(&job, "last_message");
    tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=%d", OP_TIMEOUT_MS);
    cr_assert(tt_job_run(&job, 60000), "%s did not end within 60 s:\n%s", tt_job_command(&job),
              tt_excerpt(job.output, kNeedles));
    /* Once (CI, 2026-11-27, beside the collective matrix) rank 0 printed nothing at all
     * and the launcher nothing about it; how the launcher ended says more next time. */
    cr_assert(strstr(job.output, "RECEIVED TUTTI_OK 42"), "run %d: rank 0 lost the message (the launcher %s %d):\n%s",
              run, job.process.signaled ? "was killed by signal" : "exited with code",
              job.process.signaled ? job.process.signaled : job.process.exit_code, tt_excerpt(job.output, kNeedles));
    cr_assert(job.process.exited && job.process.exit_code == 0, "run %d:\n%s", run, tt_excerpt(job.output, kNeedles));
  }
}

/* tutti_comm_abort from another thread while rank 0 has a 64 MiB isend hanging in UCX,
 * an asynchronous all_reduce queued and a blocking one waiting in shared memory: all
 * three end with ABORTED, abort itself returns at once, destroy does not hang, and the
 * other rank learns that rank 0 left (coll_abort). */
Test(faults, abort_from_another_thread_ends_every_wait, .timeout = 150) {
  tt_job_init(&job, 2, 120, "coll_abort");
  tt_job_launcher_option(&job, "--keep-going");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=%d", OP_TIMEOUT_MS);
  cr_assert(tt_job_run(&job, 100000), "%s did not end within 100 s:\n%s", tt_job_command(&job),
            tt_excerpt(job.output, kNeedles));
  static const char* const needles[] = {"ABORT", "BLOCKING", "ISEND", "ASYNC", "DESTROY", "AFTER", "WARN", NULL};
  char line[4096];
  cr_assert(tt_rank_line(job.output, 0, "ABORT_CALL ", line, sizeof line), "%s", tt_excerpt(job.output, needles));
  long long abort_ms = atoll(line);
  cr_expect(abort_ms < 1000, "tutti_comm_abort took %lld ms; tutti.h promises under 1 s", abort_ms);
  cr_assert(tt_rank_line(job.output, 0, "BLOCKING TUTTI_ERR_ABORTED ", line, sizeof line), "%s",
            tt_excerpt(job.output, needles));
  long long blocking_ms = atoll(line);
  cr_expect(blocking_ms < 5000, "the blocking all_reduce returned %lld ms after the abort", blocking_ms);
  cr_expect(tt_rank_line(job.output, 0, "ISEND TUTTI_ERR_ABORTED", line, sizeof line), "%s",
            tt_excerpt(job.output, needles));
  cr_expect(tt_rank_line(job.output, 0, "ASYNC TUTTI_ERR_ABORTED", line, sizeof line), "%s",
            tt_excerpt(job.output, needles));
  cr_assert(tt_rank_line(job.output, 0, "DESTROY ", line, sizeof line), "%s", tt_excerpt(job.output, needles));
  long long destroy_ms = atoll(line);
  cr_expect(destroy_ms < 10000, "tutti_comm_destroy after the abort took %lld ms", destroy_ms);
  cr_assert(tt_rank_line(job.output, 1, "AFTER TUTTI_ERR_PEER_LOST ", line, sizeof line), "%s",
            tt_excerpt(job.output, needles));
  cr_expect(strstr(line, "rank 0 (host ") && strstr(line, "aborted its communicator"), "%s", line);
  cr_expect(job.process.exited && job.process.exit_code == 0, "%s", tt_excerpt(job.output, needles));
  printf(
      "faults: tutti_comm_abort returned in %lld ms; the blocking all_reduce %lld ms after it; destroy took "
      "%lld ms\n",
      abort_ms, blocking_ms, destroy_ms);
}
