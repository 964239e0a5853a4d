/* tutti launch, through the real binary: worlds of 1 to 8 ranks and their variables,
 * output tagging and line handling, a failing or killed rank stopping the others,
 * signals to the launcher, --timeout, concurrent launches, bad usage, and a launcher
 * killed outright. The ranks are /bin/sh scripts, so they need no build; they print
 * "pid $$" first when a test must check afterwards that they are gone. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/launch_job.h"
#include "tests/support/processes.h"
#include "tests/support/rank_setup.h"

#ifndef TUTTI_TEST_LAUNCHER
#error "TUTTI_TEST_LAUNCHER (the tutti binary) must be defined by tests/support"
#endif

#define MAX_ARGS 24
#define MAX_PIDS 64

/* ---- helpers ---------------------------------------------------------------------- */

/* Every process a test starts lives here, so that teardown kills (by PID) and removes
 * what a failed assertion left behind. Criterion runs each test in a process of its own. */
#define MAX_PROCESSES 32
static tt_process pool[MAX_PROCESSES];
static int pool_used;

static tt_process* new_process(void) {
  cr_assert_lt(pool_used, MAX_PROCESSES, "raise MAX_PROCESSES");
  return &pool[pool_used++];
}

static void teardown(void) { tt_cleanup_all(pool, pool_used); }

/* Starts `tutti ARGS...` (args NULL-terminated) with env_add in its environment. */
static void start_tutti(tt_process* process, const char* const* args, char* const* env_add) {
  char* argv[MAX_ARGS + 2];
  int n = 0;
  argv[n++] = (char*)TUTTI_TEST_LAUNCHER;
  for (; args[n - 1] != NULL && n <= MAX_ARGS; ++n) argv[n] = (char*)args[n - 1];
  argv[n] = NULL;
  cr_assert_eq(tt_spawn(process, argv, env_add), 0, "cannot start %s", TUTTI_TEST_LAUNCHER);
}

/* Runs `tutti ARGS...` to its end, with a bound; returns its output (free it). */
static char* run_tutti(tt_process* process, const char* const* args, int bound_ms) {
  start_tutti(process, args, NULL);
  cr_assert(tt_wait(process, tt_timeout_ms(bound_ms)), "tutti %s %s did not end within %d ms", args[0],
            args[1] ? args[1] : "", bound_ms);
  return tt_output(process);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until the output holds count copies of needle; returns the output (free it). */
static char* wait_for_output(tt_process* process, const char* needle, int count, int bound_ms) {
  long long deadline = now_ms() + tt_timeout_ms(bound_ms);
  for (;;) {
    char* output = tt_output(process);
    if (tt_count(output, needle) >= count) return output;
    if (now_ms() > deadline)
      cr_assert_fail("waited %d ms for %d x \"%s\"; output so far:\n%s", bound_ms, count, needle, output);
    free(output);
    usleep(20000);
  }
}

/* Alive means running: a zombie (exited, not yet reaped by whoever adopted it) is dead. */
static int pid_alive(int pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* file = fopen(path, "r");
  if (file == NULL) return 0;
  char line[512];
  size_t got = fread(line, 1, sizeof line - 1, file);
  fclose(file);
  line[got] = '\0';
  const char* close_paren = strrchr(line, ')');
  return close_paren != NULL && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

/* Collects the numbers after every "word " in text (e.g. "pid 1234"). */
static int numbers_after(const char* text, const char* word, int* out, int max) {
  int n = 0;
  for (const char* at = strstr(text, word); at != NULL && n < max; at = strstr(at + 1, word)) {
    out[n++] = atoi(at + strlen(word));
  }
  return n;
}

/* Waits up to bound_ms for every pid to be gone; fails naming the ones left. */
static void assert_all_gone(const int* pids, int n, int bound_ms, const char* output) {
  long long deadline = now_ms() + tt_timeout_ms(bound_ms);
  for (;;) {
    int alive = -1;
    for (int i = 0; i < n && alive < 0; ++i) {
      if (pid_alive(pids[i])) alive = pids[i];
    }
    if (alive < 0) return;
    if (now_ms() > deadline) {
      kill(alive, SIGKILL);
      cr_assert_fail("pid %d still runs %d ms after the launcher ended; output:\n%s", alive, bound_ms, output);
    }
    usleep(20000);
  }
}

/* Every line of output that starts with "[" must be "[R] " + a rank in [0, n). */
static void assert_tagged(const char* output, int n) {
  char* copy = strdup(output);
  char* save = NULL;
  for (char* line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] != '[') continue;
    int rank = -1;
    int consumed = 0;
    cr_assert(sscanf(line, "[%d] %n", &rank, &consumed) == 1 && consumed > 0, "bad prefix: %s", line);
    cr_assert(rank >= 0 && rank < n, "rank out of range in: %s", line);
  }
  free(copy);
}

TestSuite(launcher, .fini = teardown, .timeout = 60);

/* ---- worlds --------------------------------------------------------------------- */

ParameterizedTestParameters(launcher, world_variables) {
  static int sizes[] = {1, 2, 3, 4, 8};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, launcher, world_variables, .timeout = 60) {
  int n = *size;
  char n_text[16];
  snprintf(n_text, sizeof n_text, "%d", n);
  const char* args[] = {"launch",
                        "-n",
                        n_text,
                        "--",
                        "/bin/sh",
                        "-c",
                        "echo \"rank=$TUTTI_RANK world=$TUTTI_WORLD_SIZE local=$TUTTI_LOCAL_RANK/$TUTTI_LOCAL_SIZE"
                        " addr=$TUTTI_ADDR host=$TUTTI_HOST init=$TUTTI_INIT_METHOD server=$TUTTI_STORE_SERVER"
                        " launcher=$TUTTI_LAUNCHER_PID\"",
                        NULL};
  tt_process* process = new_process();
  start_tutti(process, args, NULL);
  int launcher_pid = process->pid;
  cr_assert(tt_wait(process, tt_timeout_ms(20000)));
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "exit %d; output:\n%s", process->exit_code, output);
  cr_assert_eq(process->signaled, 0);
  assert_tagged(output, n);

  char first_addr[64] = "";
  for (int rank = 0; rank < n; ++rank) {
    char expected[128];
    snprintf(expected, sizeof expected, "[%d] rank=%d world=%d local=%d/%d addr=127.0.0.1:", rank, rank, n, rank, n);
    cr_assert_eq(tt_count(output, expected), 1, "rank %d: want exactly one \"%s\" in:\n%s", rank, expected, output);
    const char* addr = strstr(strstr(output, expected), "addr=");
    char this_addr[64];
    cr_assert_eq(sscanf(addr, "addr=%63s", this_addr), 1);
    if (rank == 0) {
      strcpy(first_addr, this_addr);
      int port = atoi(strchr(this_addr, ':') + 1);
      cr_assert(port > 0 && port < 65536, "bad port in %s", this_addr);
    }
    cr_assert_str_eq(this_addr, first_addr, "ranks 0 and %d were told different stores", rank);
  }
  char tail[96];
  snprintf(tail, sizeof tail, "host=127.0.0.1 init=env:// server=launcher launcher=%d", launcher_pid);
  cr_assert_eq(tt_count(output, tail), n, "want %d x \"%s\" in:\n%s", n, tail, output);
  cr_assert_eq(tt_count(output, "tutti launch:"), 0, "nothing extra on success:\n%s", output);
  free(output);
  tt_cleanup(process);
}

/* The integer that ends the line starting at line. */
static int last_field_int(const char* line) {
  const char* end = line + strcspn(line, "\n");
  const char* start = end;
  while (start > line && start[-1] != ' ') --start;
  return atoi(start);
}

/* torch's env:// variables are the launcher's too (RANK ... MASTER_PORT), so that a
 * torch.distributed script runs under it as under torchrun. */
Test(launcher, inherited_variables_are_replaced_but_init_method_is_kept, .timeout = 60) {
  const char* args[] = {"launch",
                        "-n",
                        "2",
                        "/bin/sh",
                        "-c",
                        "echo \"got $TUTTI_RANK $TUTTI_WORLD_SIZE $TUTTI_INIT_METHOD $RANK $WORLD_SIZE $LOCAL_RANK "
                        "$LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT\"",
                        NULL};
  char* env[] = {"TUTTI_RANK=7",
                 "TUTTI_WORLD_SIZE=9",
                 "TUTTI_INIT_METHOD=file:///tmp/elsewhere",
                 "RANK=5",
                 "WORLD_SIZE=9",
                 "MASTER_ADDR=elsewhere",
                 "MASTER_PORT=1",
                 NULL};
  tt_process* process = new_process();
  start_tutti(process, args, env);
  cr_assert(tt_wait(process, tt_timeout_ms(20000)));
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert_eq(tt_count(output, "[0] got 0 2 file:///tmp/elsewhere 0 2 0 2 127.0.0.1 "), 1, "%s", output);
  cr_assert_eq(tt_count(output, "[1] got 1 2 file:///tmp/elsewhere 1 2 1 2 127.0.0.1 "), 1, "%s", output);
  /* One MASTER_PORT for the job, a real port, and not the launcher's store's. */
  const char* line0 = strstr(output, "[0] got ");
  const char* line1 = strstr(output, "[1] got ");
  cr_assert(line0 != NULL && line1 != NULL, "%s", output);
  int port0 = last_field_int(line0);
  int port1 = last_field_int(line1);
  cr_assert(port0 > 1 && port0 < 65536 && port0 == port1, "MASTER_PORT %d and %d in:\n%s", port0, port1, output);
  free(output);
  tt_cleanup(process);
}

/* The rendezvous itself, when the C API and its rank program are built. */
Test(launcher, ranks_meet_through_the_launchers_store, .timeout = 120) {
  const char* program = TUTTI_TEST_BINARY_DIR "/tests/programs/rank_report";
  if (access(program, X_OK) != 0) {
    printf("SKIPPED (%s is not built)\n", program);
    cr_skip_test("rank_report is not built");
  }
  static const char* sizes[] = {"1", "2", "4", "8"};
  for (int i = 0; i < 4; ++i) {
    const char* args[] = {"launch", "-n", sizes[i], "--timeout", "60", program, NULL};
    tt_process* process = new_process();
    char* output = run_tutti(process, args, 70000);
    int n = atoi(sizes[i]);
    cr_assert_eq(process->exit_code, 0, "-n %d: exit %d; output:\n%s", n, process->exit_code, output);
    for (int rank = 0; rank < n; ++rank) {
      char expected[96];
      snprintf(expected, sizeof expected, "[%d] PLACE rank=%d size=%d local=%d/%d node=0\n", rank, rank, n, rank, n);
      cr_assert_eq(tt_count(output, expected), 1, "want \"%s\" in:\n%s", expected, output);
    }
    free(output);
    tt_cleanup(process);
  }
}

/* --nodes K: each rank is told its emulated node and its place in it, as srun tells
 * ranks on real nodes, and the communicator sees that many nodes. */
Test(launcher, nodes_emulates_machines, .timeout = 120) {
  const char* program = TUTTI_TEST_BINARY_DIR "/tests/programs/rank_report";
  if (access(program, X_OK) != 0) {
    printf("SKIPPED (%s is not built)\n", program);
    cr_skip_test("rank_report is not built");
  }
  const char* args[] = {"launch", "-n", "5", "--nodes", "2", "--timeout", "60", program, NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 70000);
  cr_assert_eq(process->exit_code, 0, "exit %d; output:\n%s", process->exit_code, output);
  /* Blocks, as Slurm's default distribution: ranks 0-2 on node 0, 3-4 on node 1. */
  const char* expected[] = {"[0] PLACE rank=0 size=5 local=0/3 node=0\n", "[1] PLACE rank=1 size=5 local=1/3 node=0\n",
                            "[2] PLACE rank=2 size=5 local=2/3 node=0\n", "[3] PLACE rank=3 size=5 local=0/2 node=1\n",
                            "[4] PLACE rank=4 size=5 local=1/2 node=1\n"};
  for (int rank = 0; rank < 5; ++rank) {
    cr_assert_eq(tt_count(output, expected[rank]), 1, "want \"%s\" in:\n%s", expected[rank], output);
  }
  free(output);
  tt_cleanup(process);

  const char* env_args[] = {"launch",
                            "-n",
                            "3",
                            "--nodes",
                            "3",
                            "/bin/sh",
                            "-c",
                            "echo \"got $TUTTI_NODE_RANK $GROUP_RANK $TUTTI_LOCAL_RANK/$TUTTI_LOCAL_SIZE "
                            "$LOCAL_RANK/$LOCAL_WORLD_SIZE\"",
                            NULL};
  process = new_process();
  output = run_tutti(process, env_args, 20000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  for (int rank = 0; rank < 3; ++rank) {
    char line[64];
    snprintf(line, sizeof line, "[%d] got %d %d 0/1 0/1\n", rank, rank, rank);
    cr_assert_eq(tt_count(output, line), 1, "want \"%s\" in:\n%s", line, output);
  }
  free(output);
  tt_cleanup(process);
}

/* --bind cpu: rank r runs on the (r mod count)-th CPU the launcher may use, and on it
 * alone; without it, on every CPU the launcher may use. Launched from this process,
 * which may itself be confined (taskset, a cpuset), the launcher gets its CPUs. */
Test(launcher, bind_cpu_deals_the_launchers_cpus_out_to_the_ranks, .timeout = 60) {
  cpu_set_t allowed;
  cr_assert_eq(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int cpus[CPU_SETSIZE];
  int count = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus[count++] = cpu;
  }
  const char* report = "echo \"cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2)\"";
  const char* args[] = {"launch", "-n", "3", "--bind", "cpu", "/bin/sh", "-c", report, NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 30000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  for (int rank = 0; rank < 3; ++rank) {
    char line[64];
    snprintf(line, sizeof line, "[%d] cpus %d\n", rank, cpus[rank % count]);
    cr_assert_eq(tt_count(output, line), 1, "want \"%s\" in:\n%s", line, output);
  }
  free(output);
  tt_cleanup(process);

  /* Unbound, a rank may run wherever the launcher may. */
  const char* unbound_args[] = {"launch", "-n", "1", "/bin/sh", "-c", report, NULL};
  process = new_process();
  output = run_tutti(process, unbound_args, 30000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  int ranks_cpus = 0;
  const char* listed = strstr(output, "cpus ");
  cr_assert_not_null(listed, "%s", output);
  /* "0-1" or "0,2-3": count the CPUs the list names. */
  for (const char* at = listed + 5; *at != '\n' && *at != '\0';) {
    char* end = NULL;
    long first = strtol(at, &end, 10);
    long last = *end == '-' ? strtol(end + 1, &end, 10) : first;
    ranks_cpus += (int)(last - first + 1);
    at = *end == ',' ? end + 1 : end;
  }
  cr_assert_eq(ranks_cpus, count, "an unbound rank runs on %d CPUs, the launcher on %d:\n%s", ranks_cpus, count,
               output);
  free(output);
  tt_cleanup(process);
}

/* ---- the job secret --------------------------------------------------------------- */

/* Every rank sees the same secret, and the store checks it: ranks_meet_through_the_
 * launchers_store above authenticates with the one generated here. */
Test(launcher, each_job_gets_a_fresh_secret_unless_the_user_set_one, .timeout = 60) {
  unsetenv("TUTTI_SECRET");
  const char* args[] = {"launch", "-n", "2", "/bin/sh", "-c", "echo \"secret=$TUTTI_SECRET\"", NULL};
  char secrets[2][80];
  for (int job = 0; job < 2; ++job) {
    tt_process* process = new_process();
    char* output = run_tutti(process, args, 20000);
    cr_assert_eq(process->exit_code, 0, "%s", output);
    const char* at = strstr(output, "[0] secret=");
    cr_assert(at != NULL && sscanf(at, "[0] secret=%79s", secrets[job]) == 1, "%s", output);
    cr_assert(strlen(secrets[job]) == 64 && strspn(secrets[job], "0123456789abcdef") == 64,
              "want 64 hex digits, got \"%s\"", secrets[job]);
    char rank1[sizeof "[1] secret=\n" + sizeof secrets]; /* room for any row of secrets */
    snprintf(rank1, sizeof rank1, "[1] secret=%s\n", secrets[job]);
    cr_assert(strstr(output, rank1) != NULL, "ranks 0 and 1 were given different secrets:\n%s", output);
    free(output);
    tt_cleanup(process);
  }
  cr_assert_str_neq(secrets[0], secrets[1], "two jobs got the same secret");

  char* env[] = {"TUTTI_SECRET=chosen by the user", NULL};
  tt_process* process = new_process();
  start_tutti(process, args, env);
  cr_assert(tt_wait(process, tt_timeout_ms(20000)));
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert(strstr(output, "[0] secret=chosen by the user\n") != NULL &&
                strstr(output, "[1] secret=chosen by the user\n") != NULL,
            "%s", output);
  free(output);
  tt_cleanup(process);

  /* tutti info says that it is set, never what it is. */
  const char* info[] = {"info", NULL};
  start_tutti(process, info, env);
  cr_assert(tt_wait(process, tt_timeout_ms(10000)));
  output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  const char* row = strstr(output, "TUTTI_SECRET ");
  cr_assert(row != NULL && strstr(row, "(set)") != NULL && strstr(output, "chosen by the user") == NULL, "%s", output);
  free(output);
  tt_cleanup(process);
}

/* A process that finds the port of another job's store, with a secret of its own or
 * none, is denied (TUTTI_ERR_DENIED, saying how to fix it), and the launcher logs it;
 * the store is not there at all on any address but 127.0.0.1. */
Test(launcher, the_store_denies_strangers_and_listens_on_loopback_only, .timeout = 60) {
  const char* program = TUTTI_TEST_BINARY_DIR "/tests/programs/rank_report";
  if (access(program, X_OK) != 0) {
    printf("SKIPPED (%s is not built)\n", program);
    cr_skip_test("rank_report is not built");
  }
  unsetenv("TUTTI_SECRET");
  const char* args[] = {"launch", "-n", "1", "/bin/sh", "-c", "echo addr=$TUTTI_ADDR; sleep 30", NULL};
  tt_process* job = new_process();
  start_tutti(job, args, NULL);
  const char* prefix = "[0] addr=127.0.0.1:";
  char* output = wait_for_output(job, prefix, 1, 10000);
  int port = atoi(strstr(output, prefix) + strlen(prefix));
  free(output);
  cr_assert(port > 0 && port < 65536);

  const char* secrets[] = {"another job's secret", NULL};
  int stranger_pids[2];
  for (int i = 0; i < 2; ++i) {
    tt_rank_setup setup;
    tt_setup_init(&setup, program);
    tt_setup_arg(&setup, "--no-split");
    tt_setup_env(&setup, "TUTTI_ADDR=127.0.0.1:%d", port);
    tt_setup_env(&setup, "TUTTI_RANK=1");
    tt_setup_env(&setup, "TUTTI_WORLD_SIZE=2");
    tt_setup_env(&setup, "TUTTI_STORE_SERVER=launcher");
    if (secrets[i] != NULL) tt_setup_env(&setup, "TUTTI_SECRET=%s", secrets[i]);
    tt_process* stranger = new_process();
    cr_assert_eq(tt_spawn(stranger, setup.argv, setup.env), 0);
    stranger_pids[i] = (int)stranger->pid;
    cr_assert(tt_wait(stranger, tt_timeout_ms(15000)), "a denied process did not end");
    char* said = tt_output(stranger);
    cr_assert_eq(stranger->exit_code, 1, "%s", said);
    cr_assert(strstr(said, "ERROR TUTTI_ERR_DENIED") != NULL && strstr(said, "the job secret did not match") != NULL &&
                  strstr(said, "set TUTTI_SECRET to the same value") != NULL,
              "%s", said);
    free(said);
  }
  /* Named by pid: on the store's machine they came through its Unix socket. */
  for (int i = 0; i < 2; ++i) {
    char denied[96];
    snprintf(denied, sizeof denied, "denied the connection from local pid %d:", stranger_pids[i]);
    output = wait_for_output(job, denied, 1, 5000);
    free(output);
  }

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, "127.0.0.2", &address.sin_addr);
  int connected = connect(fd, (struct sockaddr*)&address, sizeof address);
  int error = errno;
  close(fd);
  cr_assert(connected != 0 && error == ECONNREFUSED, "the launcher's store answered on 127.0.0.2 (%s)",
            strerror(error));

  tt_signal(job, SIGTERM);
  cr_assert(tt_wait(job, tt_timeout_ms(10000)));
  tt_cleanup(job);
}

/* ---- output --------------------------------------------------------------------- */

Test(launcher, partial_last_lines_are_flushed_with_a_newline, .timeout = 60) {
  const char* args[] = {"launch", "-n", "2", "/bin/sh", "-c", "printf 'first\\nlast-out'; printf 'last-err' >&2", NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 20000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  for (int rank = 0; rank < 2; ++rank) {
    char line[64];
    snprintf(line, sizeof line, "[%d] first\n", rank);
    cr_assert_eq(tt_count(output, line), 1, "%s", output);
    snprintf(line, sizeof line, "[%d] last-out\n", rank);
    cr_assert_eq(tt_count(output, line), 1, "%s", output);
    snprintf(line, sizeof line, "[%d] last-err\n", rank);
    cr_assert_eq(tt_count(output, line), 1, "%s", output);
  }
  free(output);
  tt_cleanup(process);
}

/* 200,000 bytes with no newline from each of two ranks: pieces of at most 64 KiB, each
 * tagged and whole, never mixing the two ranks' bytes. */
Test(launcher, long_lines_come_in_tagged_pieces, .timeout = 60) {
  const char* args[] = {"launch",  "-n", "2",
                        "/bin/sh", "-c", "c=x; [ $TUTTI_RANK = 1 ] && c=y; head -c 200000 /dev/zero | tr '\\0' $c",
                        NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 20000);
  cr_assert_eq(process->exit_code, 0, "exit %d", process->exit_code);
  size_t bytes[2] = {0, 0};
  int pieces[2] = {0, 0};
  char* save = NULL;
  for (char* line = strtok_r(output, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    int rank = line[1] - '0';
    cr_assert(line[0] == '[' && (rank == 0 || rank == 1) && line[2] == ']' && line[3] == ' ', "bad line start: %.40s",
              line);
    char want = rank == 0 ? 'x' : 'y';
    size_t length = strlen(line + 4);
    cr_assert(length > 0 && length <= 64 * 1024, "piece of %zu bytes", length);
    for (size_t i = 0; i < length; ++i) cr_assert_eq(line[4 + i], want, "rank %d's line holds '%c'", rank, line[4 + i]);
    bytes[rank] += length;
    ++pieces[rank];
  }
  cr_assert_eq(bytes[0], 200000);
  cr_assert_eq(bytes[1], 200000);
  cr_assert_eq(pieces[0], 4, "200000 bytes are 3 pieces of 65536 and one of 3392, not %d", pieces[0]);
  free(output);
  tt_cleanup(process);
}

Test(launcher, no_tag_output_prints_lines_as_they_are, .timeout = 60) {
  const char* args[] = {"launch", "--no-tag-output", "-n", "2", "/bin/sh", "-c", "echo plain-$TUTTI_RANK", NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 20000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert_eq(tt_count(output, "plain-0\n"), 1, "%s", output);
  cr_assert_eq(tt_count(output, "plain-1\n"), 1, "%s", output);
  cr_assert_eq(tt_count(output, "["), 0, "%s", output);
  free(output);
  tt_cleanup(process);
}

/* A rank's stderr goes to the launcher's stderr, and its stdout to stdout. */
Test(launcher, stdout_and_stderr_stay_apart, .timeout = 60) {
  const char* args[] = {"/bin/sh", "-c",
                        "exec \"$0\" launch -n 1 /bin/sh -c 'echo to-out; echo to-err >&2' 2>/dev/null",
                        TUTTI_TEST_LAUNCHER, NULL};
  tt_process* process = new_process();
  cr_assert_eq(tt_spawn(process, (char* const*)args, NULL), 0);
  cr_assert(tt_wait(process, tt_timeout_ms(20000)));
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert_eq(tt_count(output, "[0] to-out\n"), 1, "%s", output);
  cr_assert_eq(tt_count(output, "to-err"), 0, "%s", output);
  free(output);
  tt_cleanup(process);
}

/* ---- failures ------------------------------------------------------------------- */

/* The others print their own pid and a child's, and sleep; all must be gone after. */
#define SLEEPER "echo pid $$; sleep 30 & echo pid $!; wait"

Test(launcher, failing_rank_stops_the_others, .timeout = 60) {
  const char* args[] = {
      "launch", "-n", "4", "/bin/sh", "-c", "if [ $TUTTI_RANK = 2 ]; then sleep 0.5; exit 3; fi; " SLEEPER, NULL};
  tt_process* process = new_process();
  start_tutti(process, args, NULL);
  long long started = now_ms();
  cr_assert(tt_wait(process, tt_timeout_ms(10000)), "the launcher did not end after rank 2 failed");
  long long took = now_ms() - started;
  char* output = tt_output(process);
  cr_assert_eq(process->signaled, 0);
  cr_assert_eq(process->exit_code, 3, "want the failing rank's code, 3; got %d:\n%s", process->exit_code, output);
  cr_assert(took < tt_timeout_ms(3000), "took %lld ms: the sleepers should end at SIGTERM, not SIGKILL", took);
  cr_assert(strstr(output, "tutti launch: rank 2 (pid ") != NULL, "%s", output);
  cr_assert(strstr(output, ") exited with code 3; stopping the other 3 ranks\n") != NULL, "%s", output);
  int pids[MAX_PIDS];
  int n = numbers_after(output, "pid ", pids, MAX_PIDS);
  cr_assert_geq(n, 6, "want 3 ranks x 2 pids (+ rank 2's in the message):\n%s", output);
  assert_all_gone(pids, n, 2000, output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, rank_killed_by_a_signal_is_named, .timeout = 60) {
  const char* args[] = {"launch",  "-n", "3",
                        "/bin/sh", "-c", "if [ $TUTTI_RANK = 1 ]; then sleep 0.3; kill -KILL $$; fi; " SLEEPER,
                        NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 10000);
  cr_assert_eq(process->exit_code, 128 + 9, "want 137; got %d:\n%s", process->exit_code, output);
  cr_assert(strstr(output, "tutti launch: rank 1 (pid ") != NULL, "%s", output);
  cr_assert(strstr(output, ") was killed by signal 9 (SIGKILL); stopping the other 2 ranks\n") != NULL, "%s", output);
  int pids[MAX_PIDS];
  int n = numbers_after(output, "pid ", pids, MAX_PIDS);
  assert_all_gone(pids, n, 2000, output);
  free(output);
  tt_cleanup(process);
}

/* A rank that ignores SIGTERM gets SIGKILL after the grace period. */
Test(launcher, rank_ignoring_sigterm_is_killed_after_the_grace_period, .timeout = 60) {
  const char* args[] = {"launch", "-n", "2", "/bin/sh", "-c",
                        /* Rank 0 fails only once rank 1 ignores SIGTERM (a file named after their
                         * common parent, the launcher, says so), however slowly the shells start. */
                        "mark=/tmp/tutti-test-trap.$PPID; "
                        "if [ $TUTTI_RANK = 0 ]; then i=0; while [ ! -e $mark ] && [ $i -lt 200 ]; do "
                        "sleep 0.05; i=$((i+1)); done; rm -f $mark; exit 1; fi; "
                        "trap '' TERM; echo pid $$; touch $mark; while :; do sleep 0.1; done",
                        NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 15000);
  cr_assert_eq(process->exit_code, 1, "%s", output);
  cr_assert(strstr(output, "tutti launch: rank 1 was still running 3 s after SIGTERM; sending SIGKILL\n") != NULL, "%s",
            output);
  int pids[MAX_PIDS];
  int n = numbers_after(output, "pid ", pids, MAX_PIDS);
  assert_all_gone(pids, n, 2000, output);
  free(output);
  tt_cleanup(process);
}

/* ---- signals and timeouts -------------------------------------------------------- */

static void check_signal_is_passed_on(int sig, int want_exit, const char* name) {
  const char* args[] = {"launch", "-n", "3", "/bin/sh", "-c", SLEEPER, NULL};
  tt_process* process = new_process();
  start_tutti(process, args, NULL);
  free(wait_for_output(process, "pid ", 6, 10000));
  tt_signal(process, sig);
  cr_assert(tt_wait(process, tt_timeout_ms(10000)), "the launcher did not end after %s", name);
  char* output = tt_output(process);
  cr_assert_eq(process->signaled, 0, "the launcher died of signal %d", process->signaled);
  cr_assert_eq(process->exit_code, want_exit, "got %d:\n%s", process->exit_code, output);
  char expected[96];
  snprintf(expected, sizeof expected, "tutti launch: got %s; passing it on to ranks 0-2", name);
  cr_assert(strstr(output, expected) != NULL, "want \"%s\" in:\n%s", expected, output);
  int pids[MAX_PIDS];
  int n = numbers_after(output, "pid ", pids, MAX_PIDS);
  cr_assert_eq(n, 6, "%s", output);
  assert_all_gone(pids, n, 2000, output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, sigterm_is_passed_on_and_exits_143, .timeout = 60) {
  check_signal_is_passed_on(SIGTERM, 143, "SIGTERM");
}

Test(launcher, sigint_is_passed_on_and_exits_130, .timeout = 60) { check_signal_is_passed_on(SIGINT, 130, "SIGINT"); }

/* ---- interactive mode (the REPL's) ------------------------------------------------- */

/* Each rank reports what it read from stdin and whose process group it is in. */
#define GROUP_REPORTER                                                                                         \
  "own=$(cut -d' ' -f5 /proc/$$/stat); launcher=$(cut -d' ' -f5 /proc/$TUTTI_LAUNCHER_PID/stat); "             \
  "if read line; then echo \"rank $TUTTI_RANK read $line\"; else echo \"rank $TUTTI_RANK read nothing\"; fi; " \
  "if [ $own = $launcher ]; then echo \"rank $TUTTI_RANK in the launcher's group\"; fi; "                      \
  "if [ $own = $$ ]; then echo \"rank $TUTTI_RANK leads its group\"; fi"

Test(launcher, interactive_rank_0_gets_the_launchers_stdin_stdout_and_group, .timeout = 60) {
  char* argv[] = {"/bin/sh",
                  "-c",
                  "printf 'hello\\n' | exec \"$0\" launch -n 3 --interactive /bin/sh -c \"$1\"",
                  (char*)TUTTI_TEST_LAUNCHER,
                  GROUP_REPORTER,
                  NULL};
  tt_process* process = new_process();
  cr_assert_eq(tt_spawn(process, argv, NULL), 0);
  cr_assert(tt_wait(process, tt_timeout_ms(20000)), "the job did not end");
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  /* Rank 0's lines come untagged, straight from its stdout. */
  cr_assert(strncmp(output, "rank 0 read hello\n", 18) == 0 || strstr(output, "\nrank 0 read hello\n") != NULL, "%s",
            output);
  cr_assert(strstr(output, "rank 0 in the launcher's group\n") != NULL, "%s", output);
  cr_assert_eq(tt_count(output, "leads its group"), 2, "%s", output);
  for (int rank = 1; rank <= 2; ++rank) {
    char line[64];
    snprintf(line, sizeof line, "[%d] rank %d read nothing\n", rank, rank);
    cr_assert(strstr(output, line) != NULL, "%s", output);
    snprintf(line, sizeof line, "[%d] rank %d leads its group\n", rank, rank);
    cr_assert(strstr(output, line) != NULL, "%s", output);
  }
  free(output);
  tt_cleanup(process);
}

/* Ctrl-C reaches rank 0 from the terminal; the launcher passes SIGINT on to the others
 * and the job goes on. Ranks 1 and 2 end on it, rank 0 (which the test's kill does not
 * reach) ends later on its own, and the exit status is theirs, 0. */
#define INTERRUPTIBLE                                                                  \
  "trap 'echo \"rank $TUTTI_RANK got INT\"; exit 0' INT; echo \"ready $TUTTI_RANK\"; " \
  "i=0; while [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done; "                         \
  "if [ $TUTTI_RANK = 0 ]; then echo 'rank 0 done'; exit 0; fi; echo \"rank $TUTTI_RANK saw no INT\"; exit 3"

Test(launcher, interactive_sigint_is_passed_on_without_stopping_the_job, .timeout = 60) {
  const char* args[] = {"launch", "-n", "3", "--interactive", "/bin/sh", "-c", INTERRUPTIBLE, NULL};
  tt_process* process = new_process();
  start_tutti(process, args, NULL);
  free(wait_for_output(process, "ready ", 3, 10000));
  tt_signal(process, SIGINT);
  cr_assert(tt_wait(process, tt_timeout_ms(15000)), "the job did not end");
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert(strstr(output, "[1] rank 1 got INT\n") != NULL && strstr(output, "[2] rank 2 got INT\n") != NULL, "%s",
            output);
  cr_assert(strstr(output, "rank 0 done\n") != NULL, "%s", output);
  cr_assert(strstr(output, "rank 0 got INT") == NULL, "%s", output);
  cr_assert(strstr(output, "waiting up to") == NULL, "the job must not be stopped:\n%s", output);
  free(output);
  tt_cleanup(process);
}

/* PR_SET_PDEATHSIG takes the ranks, the orphan guard their children. */
Test(launcher, killing_the_launcher_takes_the_ranks_and_their_children, .timeout = 60) {
  const char* args[] = {"launch", "-n", "3", "/bin/sh", "-c", SLEEPER, NULL};
  tt_process* process = new_process();
  start_tutti(process, args, NULL);
  char* output = wait_for_output(process, "pid ", 6, 10000);
  tt_signal(process, SIGKILL);
  cr_assert(tt_wait(process, tt_timeout_ms(5000)));
  int pids[MAX_PIDS];
  int n = numbers_after(output, "pid ", pids, MAX_PIDS);
  cr_assert_eq(n, 6, "%s", output);
  assert_all_gone(pids, n, 3000, output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, timeout_stops_the_job_and_exits_124, .timeout = 60) {
  const char* args[] = {"launch", "--timeout", "1", "-n", "2", "/bin/sh", "-c", SLEEPER, NULL};
  tt_process* process = new_process();
  start_tutti(process, args, NULL);
  long long started = now_ms();
  cr_assert(tt_wait(process, tt_timeout_ms(10000)));
  long long took = now_ms() - started;
  char* output = tt_output(process);
  cr_assert_eq(process->exit_code, 124, "got %d:\n%s", process->exit_code, output);
  cr_assert(took >= 900 && took < tt_timeout_ms(4000), "took %lld ms", took);
  cr_assert(strstr(output, "tutti launch: --timeout 1 s passed with ranks 0, 1 still running; stopping them\n") != NULL,
            "%s", output);
  int pids[MAX_PIDS];
  int n = numbers_after(output, "pid ", pids, MAX_PIDS);
  assert_all_gone(pids, n, 2000, output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, two_launches_at_once_get_different_stores, .timeout = 60) {
  const char* args[] = {"launch", "-n", "2", "/bin/sh", "-c", "sleep 0.5; echo addr=$TUTTI_ADDR", NULL};
  tt_process* first = new_process();
  tt_process* second = new_process();
  start_tutti(first, args, NULL);
  start_tutti(second, args, NULL);
  cr_assert(tt_wait(first, tt_timeout_ms(20000)));
  cr_assert(tt_wait(second, tt_timeout_ms(20000)));
  char* output[2] = {tt_output(first), tt_output(second)};
  cr_assert_eq(first->exit_code, 0, "%s", output[0]);
  cr_assert_eq(second->exit_code, 0, "%s", output[1]);
  char addr[2][64];
  for (int i = 0; i < 2; ++i) {
    const char* at = strstr(output[i], "[0] addr=");
    cr_assert(at != NULL, "%s", output[i]);
    cr_assert_eq(sscanf(at, "[0] addr=%63s", addr[i]), 1);
  }
  cr_assert_str_neq(addr[0], addr[1], "both launches were told %s", addr[0]);
  free(output[0]);
  free(output[1]);
  tt_cleanup(first);
  tt_cleanup(second);
}

/* ---- usage ---------------------------------------------------------------------- */

static void check_usage_error(const char* const* args, const char* message) {
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 10000);
  cr_assert_eq(process->exit_code, 2, "want exit 2 for \"%s\"; got %d:\n%s", message, process->exit_code, output);
  cr_assert(strstr(output, message) != NULL, "want \"%s\" in:\n%s", message, output);
  cr_assert_eq(tt_count(output, "[0]"), 0, "nothing may start on bad usage:\n%s", output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, bad_usage_exits_2_before_starting_anything, .timeout = 60) {
  const char* zero[] = {"launch", "-n", "0", "/bin/true", NULL};
  check_usage_error(zero, "tutti launch: -n 0 is out of range; give the number of ranks to start, in [1, 4096]");
  const char* many[] = {"launch", "-n", "4097", "/bin/true", NULL};
  check_usage_error(many, "-n 4097 is out of range");
  const char* word[] = {"launch", "-n", "four", "/bin/true", NULL};
  check_usage_error(word, "-n \"four\" is not a number");
  const char* no_value[] = {"launch", "-n", NULL};
  check_usage_error(no_value, "-n needs a value");
  const char* no_n[] = {"launch", "/bin/true", NULL};
  check_usage_error(no_n, "missing -n N");
  const char* no_program[] = {"launch", "-n", "2", NULL};
  check_usage_error(no_program, "tutti launch: missing the program to run");
  const char* no_program_after_dashes[] = {"launch", "-n", "2", "--", NULL};
  check_usage_error(no_program_after_dashes, "missing the program to run");
  const char* unknown[] = {"launch", "-n", "2", "--frobnicate", "/bin/true", NULL};
  check_usage_error(unknown, "unknown option \"--frobnicate\"");
  const char* timeout[] = {"launch", "-n", "2", "--timeout", "0", "/bin/true", NULL};
  check_usage_error(timeout, "--timeout \"0\" is not a number of seconds");
  const char* missing[] = {"launch", "-n", "2", "no-such-program-tutti", NULL};
  check_usage_error(missing, "program \"no-such-program-tutti\" was not found in PATH");
  const char* missing_path[] = {"launch", "-n", "2", "/no/such/program", NULL};
  check_usage_error(missing_path, "program \"/no/such/program\" does not exist");
  const char* directory[] = {"launch", "-n", "2", "/tmp", NULL};
  check_usage_error(directory, "program \"/tmp\" is a directory");
  const char* run_no_n[] = {"run", "script.lua", NULL};
  check_usage_error(run_no_n, "tutti run: missing -n N, the number of ranks to start; e.g. tutti run -n 4 script.lua");
  const char* run_unknown[] = {"run", "-n", "2", "--frobnicate", NULL};
  check_usage_error(run_unknown, "tutti run: unknown option \"--frobnicate\"; see tutti run --help");

  char path[] = "/tmp/tutti-test-noexec-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  chmod(path, 0644);
  const char* not_executable[] = {"launch", "-n", "2", path, NULL};
  check_usage_error(not_executable, "is not executable");
  unlink(path);
}

/* A program that passes the checks but that execve refuses (its interpreter is
 * missing): the child reports execve's reason through its status pipe before it
 * exits, while the launcher waits for its exec (rank_process.cc). */
Test(launcher, a_program_execve_refuses_is_named_with_the_reason, .timeout = 60) {
  char path[] = "/tmp/tutti-test-badinterp-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  const char script[] = "#!/no/such/interpreter-tutti\necho never\n";
  cr_assert_eq(write(fd, script, sizeof script - 1), (ssize_t)(sizeof script - 1));
  close(fd);
  chmod(path, 0755);
  const char* args[] = {"launch", "-n", "2", path, NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 10000);
  unlink(path);
  cr_assert_eq(process->exit_code, 127, "want 127 (cannot start); got %d:\n%s", process->exit_code, output);
  cr_assert(strstr(output, "cannot start rank 0: execve ") != NULL, "%s", output);
  cr_assert(strstr(output, ": No such file or directory") != NULL, "%s", output);
  cr_assert_eq(tt_count(output, "never"), 0, "%s", output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, options_after_the_program_belong_to_it, .timeout = 60) {
  const char* args[] = {"launch", "-n", "1", "/bin/echo", "-n", "5", "--timeout", NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, args, 10000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert(strstr(output, "[0] 5 --timeout\n") != NULL, "%s", output);
  free(output);
  tt_cleanup(process);
}

Test(launcher, help_and_other_commands, .timeout = 60) {
  const char* help[] = {"launch", "--help", NULL};
  tt_process* process = new_process();
  char* output = run_tutti(process, help, 10000);
  cr_assert_eq(process->exit_code, 0);
  cr_assert(strstr(output, "usage: tutti launch -n N") != NULL, "%s", output);
  free(output);
  tt_cleanup(process);

  const char* version[] = {"version", NULL};
  output = run_tutti(process, version, 10000);
  cr_assert_eq(process->exit_code, 0);
  cr_assert(strncmp(output, "tutti ", 6) == 0, "%s", output);
  free(output);
  tt_cleanup(process);

  const char* info[] = {"info", NULL};
  output = run_tutti(process, info, 10000);
  cr_assert_eq(process->exit_code, 0, "%s", output);
  cr_assert(strstr(output, "TUTTI_INIT_METHOD") != NULL && strstr(output, "TUTTI_LOG_LEVEL") != NULL, "%s", output);
  free(output);
  tt_cleanup(process);

  const char* run_help[] = {"run", "--help", NULL};
  output = run_tutti(process, run_help, 10000);
  cr_assert_eq(process->exit_code, 0);
  cr_assert(strstr(output, "usage: tutti run -n N") != NULL, "%s", output);
  free(output);
  tt_cleanup(process);

  /* Anything else is a Lua script (tests/repl runs real ones), or a wrong option. */
  const char* script[] = {"no_such_script.lua", NULL};
  output = run_tutti(process, script, 10000);
  cr_assert_eq(process->exit_code, 1);
  cr_assert(strstr(output, "tutti: cannot open no_such_script.lua") != NULL, "%s", output);
  free(output);
  tt_cleanup(process);

  const char* option[] = {"--frobnicate", NULL};
  output = run_tutti(process, option, 10000);
  cr_assert_eq(process->exit_code, 2);
  cr_assert(strstr(output, "unknown option \"--frobnicate\"") != NULL, "%s", output);
  free(output);
  tt_cleanup(process);
}
