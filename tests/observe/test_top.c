/* `tutti top` against a real job under tutti run: a rank held in a computation shown
 * with the ranks that wait for it, a blocking recv shown with the peer it waits on,
 * and the bad cases (a wrong secret, a store that is gone, a job that is not there,
 * bad arguments), each a clear message and a non-zero exit. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/processes.h"

#define SCRIPTS TUTTI_TEST_SOURCE_DIR "/tests/observe/scripts/"
#define MAX_PROCESSES 32

static tt_process pool[MAX_PROCESSES];
static int pool_used;
static char release[2][128];

static void teardown(void) {
  tt_cleanup_all(pool, pool_used);
  for (int i = 0; i < 2; ++i) {
    if (release[i][0]) unlink(release[i]);
  }
}

TestSuite(top, .fini = teardown, .timeout = 120);

static tt_process* spawn(char* const argv[], char* const env_add[]) {
  cr_assert_lt(pool_used, MAX_PROCESSES);
  tt_process* process = &pool[pool_used++];
  cr_assert_eq(tt_spawn(process, argv, env_add), 0);
  return process;
}

/* `tutti top ARGS... --once`, to its end; returns its output (free it) and exit code. */
static char* top_once(const char* const* args, char* const* env_add, int* code) {
  char* argv[16] = {(char*)TUTTI_TEST_LAUNCHER, (char*)"top"};
  int n = 2;
  for (int i = 0; args[i] != NULL && n < 14; ++i) argv[n++] = (char*)args[i];
  argv[n++] = (char*)"--once";
  argv[n] = NULL;
  tt_process* process = spawn(argv, env_add);
  cr_assert(tt_wait(process, tt_timeout_ms(10000)), "tutti top --once did not end within 10 s");
  *code = process->signaled ? 128 + process->signaled : process->exit_code;
  return tt_output(process);
}

/* Polls `tutti top --job PID --once` until its output holds every needle; fails after
 * bound_ms with the last output. */
static char* top_until(pid_t job, const char* const* needles, int bound_ms) {
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)job);
  const char* args[] = {"--job", pid, NULL};
  char* env[] = {(char*)"NO_COLOR=1", NULL};
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int code = 0;
    char* output = top_once(args, env, &code);
    int found = code == 0;
    for (int i = 0; needles[i] != NULL && found; ++i) found = strstr(output, needles[i]) != NULL;
    if (found) return output;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed_ms = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (elapsed_ms > tt_timeout_ms(bound_ms)) cr_assert_fail("tutti top never showed what was expected:\n%s", output);
    free(output);
    pool_used--; /* reaped: its slot is free again */
    usleep(200000);
  }
}

static void touch(const char* path) {
  FILE* file = fopen(path, "w");
  cr_assert_not_null(file, "cannot create %s", path);
  fclose(file);
}

/* Starts held.lua on 4 ranks under tutti run, with its two release files named by
 * `tag` and one more variable (NULL: none); the files go in `release`, for the test to
 * touch and the teardown to remove. */
static tt_process* start_held_job(const char* tag, const char* variable) {
  snprintf(release[0], sizeof release[0], "/tmp/tutti-top-test-%d-%s-a", (int)getpid(), tag);
  snprintf(release[1], sizeof release[1], "/tmp/tutti-top-test-%d-%s-b", (int)getpid(), tag);
  static char env_release[2][160];
  snprintf(env_release[0], sizeof env_release[0], "TUTTI_TEST_RELEASE=%s", release[0]);
  snprintf(env_release[1], sizeof env_release[1], "TUTTI_TEST_RELEASE2=%s", release[1]);
  char* env[] = {env_release[0], env_release[1], (char*)variable, NULL};
  char* argv[] = {(char*)TUTTI_TEST_LAUNCHER, (char*)"run", (char*)"-n", (char*)"4", (char*)SCRIPTS "held.lua", NULL};
  return spawn(argv, env);
}

/* The line of `rank` in top's table ("    2  host:pid  idle after ..."). */
static int row_has(const char* output, int rank, const char* text) {
  char start[16];
  snprintf(start, sizeof start, "\n%5d  ", rank);
  const char* row = strstr(output, start);
  if (row == NULL) return 0;
  const char* end = strchr(row + 1, '\n');
  const char* found = strstr(row, text);
  return found != NULL && (end == NULL || found < end);
}

Test(top, shows_the_rank_held_in_a_computation_and_who_waits_for_it) {
  tt_process* job = start_held_job("computation", NULL);
  const pid_t job_pid = job->pid; /* tt_wait clears it */

  const char* held[] = {"world: 4 ranks", "ranks 0, 1, 3 wait for rank 2", "rank 2 is idle after all_reduce #1", NULL};
  char* output = top_until(job->pid, held, 30000);
  cr_assert(row_has(output, 0, "in all_reduce #2"), "%s", output);
  cr_assert(row_has(output, 3, "in all_reduce #2"), "%s", output);
  cr_assert(row_has(output, 2, "idle after all_reduce #1"), "%s", output);
  cr_assert(row_has(output, 2, " ago"), "rank 2's last heartbeat: %s", output);
  char title[64];
  snprintf(title, sizeof title, "tutti launch pid %d: 4 ranks", (int)job->pid);
  cr_assert(strstr(output, title) != NULL, "%s", output);
  free(output);

  touch(release[0]);
  const char* receiving[] = {"rank 1 waits in recv from rank 0 (tag 7)", "rank 0 is idle after all_reduce #2", NULL};
  output = top_until(job->pid, receiving, 30000);
  cr_assert(row_has(output, 1, "in recv from rank 0 (tag 7)"), "%s", output);
  free(output);

  touch(release[1]);
  cr_assert(tt_wait(job, tt_timeout_ms(30000)), "the job did not end once released");
  char* job_output = tt_output(job);
  cr_assert_eq(job->exit_code, 0, "%s", job_output);
  cr_assert(strstr(job_output, "[3] done 16") != NULL, "%s", job_output);
  free(job_output);

  /* The job has ended: its file is gone, and top says there is no such job. */
  char pid[16];
  snprintf(pid, sizeof pid, "%d", (int)job_pid);
  const char* args[] = {"--job", pid, NULL};
  int code = 0;
  output = top_once(args, NULL, &code);
  cr_assert_eq(code, 1, "%s", output);
  cr_assert(strstr(output, "no tutti launch of this user runs with pid") != NULL, "%s", output);
  free(output);
}

/* Behind a node relay (TUTTI_RELAY=on) the ranks' heartbeats stop at the relay, which
 * the store lists them under; what each does still shows, from its activity key. */
Test(top, shows_what_ranks_behind_a_relay_do) {
  tt_process* job = start_held_job("relay", "TUTTI_RELAY=on");
  const char* held[] = {"ranks 0, 1, 3 wait for rank 2", "rank 2 is idle after all_reduce #1", NULL};
  char* output = top_until(job->pid, held, 30000);
  cr_assert(row_has(output, 0, "relay ") && row_has(output, 0, "in all_reduce #2"), "%s", output);
  cr_assert(row_has(output, 2, "relay ") && row_has(output, 2, "idle after all_reduce #1"), "%s", output);
  free(output);
  touch(release[0]);
  touch(release[1]);
  cr_assert(tt_wait(job, tt_timeout_ms(30000)), "the job did not end once released");
  cr_assert_eq(job->exit_code, 0);
}

Test(top, a_wrong_secret_is_turned_away_with_a_clear_message) {
  tt_process* job = start_held_job("secret", "TUTTI_SECRET=the-right-one");
  const char* held[] = {"wait for rank 2", NULL};
  char* output = top_until(job->pid, held, 30000);
  /* The store's address, from the job file the launcher wrote. */
  char path[256], line[256], address[64] = "";
  const char* tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/tutti-%d/jobs/job-%d", tmp && *tmp ? tmp : "/tmp", (int)geteuid(), (int)job->pid);
  FILE* file = fopen(path, "r");
  cr_assert_not_null(file, "no job file at %s", path);
  while (fgets(line, sizeof line, file) != NULL) {
    if (sscanf(line, "store %63s", address) == 1) break;
  }
  fclose(file);
  cr_assert(address[0] != '\0', "no store address in %s", path);
  free(output);

  const char* args[] = {"--store", address, NULL};
  char* wrong[] = {(char*)"TUTTI_SECRET=a-wrong-one", NULL};
  int code = 0;
  output = top_once(args, wrong, &code);
  cr_assert_eq(code, 1, "%s", output);
  cr_assert(strstr(output, "turned us away") != NULL && strstr(output, "set TUTTI_SECRET to the job's") != NULL, "%s",
            output);
  free(output);
  char* right[] = {(char*)"TUTTI_SECRET=the-right-one", (char*)"NO_COLOR=1", NULL};
  output = top_once(args, right, &code);
  cr_assert_eq(code, 0, "%s", output);
  cr_assert(strstr(output, "wait for rank 2") != NULL, "%s", output);
  free(output);

  touch(release[0]);
  touch(release[1]);
  cr_assert(tt_wait(job, tt_timeout_ms(30000)), "the job did not end once released");
  cr_assert_eq(job->exit_code, 0);

  /* Its store is gone now. */
  output = top_once(args, right, &code);
  cr_assert_eq(code, 1, "%s", output);
  cr_assert(strstr(output, "cannot reach the job's store") != NULL, "%s", output);
  free(output);
}

Test(top, bad_arguments_say_what_is_wrong) {
  struct {
    const char* args[5];
    int code;
    const char* says;
  } cases[] = {
      {{"--bogus", NULL}, 2, "unknown argument \"--bogus\""},
      {{"--job", "zero", NULL}, 2, "--job needs the pid"},
      {{"--interval", "0", NULL}, 2, "--interval needs a number of seconds"},
      {{"--job", "1", "--store", "127.0.0.1:1"}, 2, "give one of --job, --store and --slurm"},
      {{"--store", "127.0.0.1:1", "--slurm", "5"}, 2, "give one of --job, --store and --slurm"},
      {{"--slurm", "5..1", NULL}, 2, "--slurm needs JOB or JOB.STEP"},
      {{"--store", "nowhere", NULL}, 2, "is not HOST:PORT"},
      {{"--job", "1", NULL}, 1, "no tutti launch of this user runs with pid 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    int code = 0;
    char* output = top_once(cases[i].args, NULL, &code);
    cr_assert_eq(code, cases[i].code, "tutti top %s: exit %d\n%s", cases[i].args[0], code, output);
    cr_assert(strstr(output, cases[i].says) != NULL, "tutti top %s:\n%s", cases[i].args[0], output);
    free(output);
  }
}
