/* `tutti SCRIPT.lua` on 1 to 5 ranks, under tutti run and with no launcher at all: a
 * script's output, checked rank by rank; a syntax error reported once, with file and
 * line, before any rank joins; a runtime error on one rank, reported with its rank and
 * traceback, and the other ranks stopped within a bound. The scripts are in
 * tests/repl/scripts. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/launch_job.h"
#include "tests/support/processes.h"
#include "tests/support/rank_setup.h"

#define SCRIPTS TUTTI_TEST_SOURCE_DIR "/tests/repl/scripts/"
#define MAX_ARGS 16
#define MAX_PROCESSES 16

static tt_process pool[MAX_PROCESSES];
static int pool_used;

static void teardown(void) { tt_cleanup_all(pool, pool_used); }

/* Runs `tutti ARGS...` (NULL-terminated) with env_add, to its end within bound_ms;
 * returns its output (free it). */
static char* run_tutti(tt_process** out, const char* const* args, char* const* env_add, int bound_ms) {
  cr_assert_lt(pool_used, MAX_PROCESSES);
  tt_process* process = &pool[pool_used++];
  char* argv[MAX_ARGS + 2] = {(char*)TUTTI_TEST_LAUNCHER};
  for (int i = 0; args[i] != NULL && i < MAX_ARGS; ++i) argv[i + 1] = (char*)args[i];
  cr_assert_eq(tt_spawn(process, argv, env_add), 0);
  cr_assert(tt_wait(process, tt_timeout_ms(bound_ms)), "tutti %s %s did not end within %d ms", args[0], args[1],
            bound_ms);
  *out = process;
  return tt_output(process);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Fails naming any pid after "pid " in output that still runs bound_ms from now. */
static void assert_pids_gone(const char* output, int bound_ms) {
  long long deadline = now_ms() + tt_timeout_ms(bound_ms);
  for (const char* at = strstr(output, "pid "); at != NULL; at = strstr(at + 1, "pid ")) {
    int pid = atoi(at + 4);
    cr_assert_gt(pid, 0);
    while (kill(pid, 0) == 0) {
      char path[64];
      snprintf(path, sizeof path, "/proc/%d/stat", pid);
      FILE* file = fopen(path, "r");
      char state = 'Z';
      if (file != NULL) {
        int ignored = fscanf(file, "%*d (%*[^)]) %c", &state);
        (void)ignored;
        fclose(file);
      }
      if (state == 'Z') break;
      if (now_ms() > deadline) {
        kill(pid, SIGKILL);
        cr_assert_fail("pid %d still runs; output:\n%s", pid, output);
      }
      usleep(20000);
    }
  }
}

TestSuite(script_runner, .fini = teardown, .timeout = 60);

ParameterizedTestParameters(script_runner, runs_on_every_rank) {
  static int sizes[] = {1, 2, 3, 4, 5};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, script_runner, runs_on_every_rank, .timeout = 60) {
  char ranks[8];
  snprintf(ranks, sizeof ranks, "%d", *size);
  const char* args[] = {"run", "-n", ranks, SCRIPTS "ranks.lua", "a", "b c", NULL};
  tt_process* process = NULL;
  char* output = run_tutti(&process, args, NULL, 30000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  for (int rank = 0; rank < *size; ++rank) {
    char line[256];
    snprintf(line, sizeof line, "[%d] rank %d of %d, pid ", rank, rank, *size);
    cr_assert_eq(tt_count(output, line), 1, "want one \"%s\" in:\n%s", line, output);
  }
  char sum[512];
  snprintf(sum, sizeof sum, ", sum %d, script " SCRIPTS "ranks.lua, args [a b c]\n", *size * (*size - 1) / 2);
  cr_assert_eq(tt_count(output, sum), *size, "want %d x \"%s\" in:\n%s", *size, sum, output);
  assert_pids_gone(output, 2000);
  free(output);
}

/* `tutti launch -n N tutti SCRIPT` needs no "--": the script is the program's argument. */
Test(script_runner, tutti_launch_takes_tutti_and_a_script) {
  const char* args[] = {"launch", "-n", "2", TUTTI_TEST_LAUNCHER, SCRIPTS "ranks.lua", "x", NULL};
  tt_process* process = NULL;
  char* output = run_tutti(&process, args, NULL, 30000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert(strstr(output, "[0] rank 0 of 2, pid ") != NULL && strstr(output, "[1] rank 1 of 2, pid ") != NULL, "%s",
            output);
  cr_assert_eq(tt_count(output, "args [x]\n"), 2, "%s", output);
  free(output);
}

/* As srun and mpirun start them: N processes of `tutti SCRIPT`, each finding its place
 * in its own environment, rank 0 serving the store. */
typedef void (*launcher_env_fn)(tt_rank_setup* setup, int rank, int n, int port);

/* Starts `tutti script` as rank 0..n-1 of a job that launcher_env describes; returns
 * the first of the n processes. */
static tt_process* start_without_launcher(launcher_env_fn launcher_env, int n, const char* script) {
  static tt_rank_setup setups[MAX_PROCESSES];
  cr_assert_leq(pool_used + n, MAX_PROCESSES);
  tt_process* ranks = &pool[pool_used];
  pool_used += n;
  int port = tt_free_port();
  for (int rank = 0; rank < n; ++rank) {
    tt_setup_init(&setups[rank], TUTTI_TEST_LAUNCHER);
    tt_setup_arg(&setups[rank], "%s", script);
    launcher_env(&setups[rank], rank, n, port);
    /* As a real srun or mpirun job should (else rank 0 warns that its store is open). */
    tt_setup_env(&setups[rank], "TUTTI_SECRET=5ec2e75ec2e75ec2e75ec2e75ec2e75e");
    cr_assert_eq(tt_spawn(&ranks[rank], setups[rank].argv, setups[rank].env), 0);
  }
  return ranks;
}

static void check_places_without_launcher(launcher_env_fn launcher_env, int n) {
  tt_process* ranks = start_without_launcher(launcher_env, n, SCRIPTS "ranks.lua");
  cr_assert_eq(tt_wait_all(ranks, n, tt_timeout_ms(30000)), n, "the ranks did not all end");
  for (int rank = 0; rank < n; ++rank) {
    char* output = tt_output(&ranks[rank]);
    char line[64];
    snprintf(line, sizeof line, "rank %d of %d, pid ", rank, n);
    cr_expect_eq(ranks[rank].exit_code, 0, "rank %d:\n%s", rank, output);
    cr_expect(strstr(output, line) == output, "rank %d:\n%s", rank, output);
    snprintf(line, sizeof line, ", sum %d, ", n * (n - 1) / 2);
    cr_expect(strstr(output, line) != NULL, "rank %d:\n%s", rank, output);
    free(output);
  }
}

Test(script_runner, finds_its_place_under_slurm_and_open_mpi) {
  check_places_without_launcher(tt_setup_slurm_env, 3);
  check_places_without_launcher(tt_setup_openmpi_env, 4);
}

/* No launcher variables: a world of one, at a store of its own. */
Test(script_runner, runs_alone_without_a_launcher) {
  const char* args[] = {SCRIPTS "ranks.lua", NULL};
  char* env[] = {"TUTTI_RANK=", "RANK=", "SLURM_PROCID=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", NULL};
  tt_process* process = NULL;
  char* output = run_tutti(&process, args, env, 20000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert(strstr(output, "rank 0 of 1, pid ") == output, "%s", output);
  cr_assert(strstr(output, "args []\n") != NULL, "%s", output);
  free(output);
}

Test(script_runner, syntax_error_is_reported_once_with_file_and_line) {
  const char* args[] = {"run", "-n", "4", SCRIPTS "syntax_error.lua", NULL};
  tt_process* process = NULL;
  char* output = run_tutti(&process, args, NULL, 20000);
  cr_assert_eq(process->exit_code, 1, "%s", output);
  cr_assert_eq(tt_count(output, "syntax_error.lua:4: unexpected symbol near '='"), 1, "%s", output);
  cr_assert(strstr(output, "[0] tutti: " SCRIPTS "syntax_error.lua:4: unexpected symbol near '='\n") != NULL, "%s",
            output);
  cr_assert(strstr(output, "never runs") == NULL, "%s", output);
  free(output);

  /* As srun starts ranks: each finds the error before joining; rank 0 alone says so. */
  const char* alone[] = {SCRIPTS "syntax_error.lua", NULL};
  char* quiet_env[] = {"SLURM_PROCID=2", "SLURM_NTASKS=4", NULL};
  output = run_tutti(&process, alone, quiet_env, 10000);
  cr_assert_eq(process->exit_code, 1, "%s", output);
  cr_assert_str_empty(output);
  free(output);
  char* speaking_env[] = {"SLURM_PROCID=0", "SLURM_NTASKS=4", NULL};
  output = run_tutti(&process, alone, speaking_env, 10000);
  cr_assert_eq(process->exit_code, 1, "%s", output);
  cr_assert(strstr(output, "syntax_error.lua:4:") != NULL, "%s", output);
  free(output);
}

/* Rank 1 fails; the launcher stops the others, which wait for it in a barrier (or
 * fail it with PEER_LOST first, whichever comes sooner). A rank may be stopped before
 * it has printed its pid; those that did must be gone. */
Test(script_runner, runtime_error_on_one_rank_stops_the_others) {
  const char* args[] = {"run", "-n", "3", SCRIPTS "runtime_error.lua", NULL};
  tt_process* process = NULL;
  long long started = now_ms();
  char* output = run_tutti(&process, args, NULL, 20000);
  long long took = now_ms() - started;
  cr_assert_eq(process->exit_code, 1, "%s", output);
  cr_assert(strstr(output, "[1] tutti: rank 1 of 3: " SCRIPTS "runtime_error.lua:10: boom on rank 1\n") != NULL, "%s",
            output);
  cr_assert(strstr(output, "[1] stack traceback:\n") != NULL, "%s", output);
  cr_assert(strstr(output, "exited with code 1; stopping the other 2 ranks") != NULL, "%s", output);
  cr_assert(strstr(output, "never entered") == NULL, "%s", output);
  /* The launcher's store does not call "lost" the rank that failed, nor those it stopped. */
  cr_assert(strstr(output, "rendezvous store: rank") == NULL, "%s", output);
  cr_assert(strstr(output, "[1] pid ") != NULL, "%s", output);
  cr_assert_lt(took, tt_timeout_ms(10000), "took %lld ms:\n%s", took, output);
  assert_pids_gone(output, 2000);
  free(output);
}

/* Without a launcher, nobody stops the others: rank 1 ends without leaving the world,
 * so the store declares it lost and the others' barrier fails at once with
 * TUTTI_ERR_PEER_LOST naming it; each reports that with its rank and exits 1. */
Test(script_runner, runtime_error_without_a_launcher_fails_the_others_collective) {
  long long started = now_ms();
  tt_process* ranks = start_without_launcher(tt_setup_slurm_env, 3, SCRIPTS "runtime_error.lua");
  cr_assert_eq(tt_wait_all(ranks, 3, tt_timeout_ms(20000)), 3, "the ranks did not all end");
  long long took = now_ms() - started;
  for (int rank = 0; rank < 3; ++rank) {
    char* output = tt_output(&ranks[rank]);
    char tag[32];
    snprintf(tag, sizeof tag, "tutti: rank %d of 3: ", rank);
    cr_expect_eq(ranks[rank].exit_code, 1, "rank %d:\n%s", rank, output);
    cr_expect(strstr(output, tag) != NULL, "rank %d:\n%s", rank, output);
    if (rank == 1) {
      cr_expect(strstr(output, "runtime_error.lua:10: boom on rank 1\nstack traceback:\n") != NULL, "%s", output);
    } else {
      cr_expect(strstr(output, "TUTTI_ERR_PEER_LOST") != NULL && strstr(output, "rank 1 ") != NULL, "rank %d:\n%s",
                rank, output);
      cr_expect(strstr(output, "never entered") == NULL, "rank %d:\n%s", rank, output);
    }
    free(output);
  }
  cr_expect_lt(took, tt_timeout_ms(10000), "took %lld ms", took);
}

/* A receive left unfinished and its Work dropped: under tutti run, srun and mpirun
 * alike the script ends at once, and rank 0 says that the receive failed: PEER_LOST
 * when rank 1 had ended first, ABORTED when rank 0's world ended first (which says so
 * too, naming the receive it cancelled). */
static void check_dropped_receive(const char* output, const char* prefix) {
  char said[96];
  snprintf(said, sizeof said, "%stutti: a Work dropped before it finished failed: TUTTI_ERR_", prefix);
  cr_expect(strstr(output, said) != NULL && strstr(output, "tutti.recv #1 (peer 1, tag 99)") != NULL,
            "want \"%s...tutti.recv #1 (peer 1, tag 99)\" in:\n%s", said, output);
  cr_expect_eq(tt_count(output, "a Work dropped before it finished failed"), 1, "%s", output);
}

Test(script_runner, a_dropped_receive_that_fails_is_said_under_every_launcher) {
  const char* args[] = {"run", "-n", "2", SCRIPTS "irecv_left.lua", NULL};
  tt_process* process = NULL;
  char* output = run_tutti(&process, args, NULL, 20000);
  cr_expect_eq(process->exit_code, 0, "%s", output);
  check_dropped_receive(output, "[0] ");
  free(output);
  launcher_env_fn launchers[] = {tt_setup_slurm_env, tt_setup_openmpi_env};
  for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; ++i) {
    long long started = now_ms();
    tt_process* ranks = start_without_launcher(launchers[i], 2, SCRIPTS "irecv_left.lua");
    if (tt_wait_all(ranks, 2, tt_timeout_ms(20000)) != 2) {
      char* outputs[2] = {tt_output(&ranks[0]), tt_output(&ranks[1])};
      cr_assert_fail("the ranks did not all end (%s):\nrank 0:\n%s\nrank 1:\n%s", i == 0 ? "srun" : "mpirun",
                     outputs[0], outputs[1]);
    }
    cr_expect_lt(now_ms() - started, tt_timeout_ms(10000), "took %lld ms", now_ms() - started);
    for (int rank = 0; rank < 2; ++rank) {
      char* rank_output = tt_output(&ranks[rank]);
      cr_expect_eq(ranks[rank].exit_code, 0, "rank %d:\n%s", rank, rank_output);
      if (rank == 0) check_dropped_receive(rank_output, "");
      free(rank_output);
    }
  }
}
