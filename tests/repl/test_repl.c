/* The REPL driven as a person drives it, through a pseudo-terminal: typing lines,
 * Ctrl-C and Ctrl-D, and reading what the terminal shows. The test opens the pty
 * itself (forkpty) rather than through tmux: the launcher is its own child, so every
 * process is known by pid and nothing outlives the test (no tmux server), and the
 * keys still go through the kernel's terminal line discipline, which turns Ctrl-C
 * into a SIGINT for the foreground process group, as for a person at a terminal. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/processes.h"

#define MAX_RANKS 8

/* One REPL session: `tutti run -n N` on a fresh pty, with a HOME of its own. */
static struct {
  pid_t pid; /* the launcher; 0 once reaped */
  int status;
  int master;
  char screen[1 << 20]; /* what the terminal showed, without \r and escape sequences */
  size_t length;
  size_t mark; /* expect() looks past here */
  int ranks;
  int rank_pids[MAX_RANKS];
  char home[64];
} repl = {.master = -1};

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Appends what the pty has to the screen, dropping \r and ANSI escape sequences. */
static void pump(int wait_ms) {
  struct pollfd fd = {repl.master, POLLIN, 0};
  if (poll(&fd, 1, wait_ms) <= 0) return;
  char bytes[4096];
  ssize_t n = read(repl.master, bytes, sizeof bytes);
  for (ssize_t i = 0; i < n; ++i) {
    if (bytes[i] == '\r') continue;
    if (bytes[i] == '\033') {
      /* CSI: ESC [ parameters, ended by a byte in 0x40..0x7e; else ESC and one byte. */
      if (i + 1 < n && bytes[i + 1] == '[') {
        i += 2;
        while (i < n && (bytes[i] < 0x40 || bytes[i] > 0x7e)) ++i;
      } else {
        ++i;
      }
      continue;
    }
    if (repl.length + 1 < sizeof repl.screen) repl.screen[repl.length++] = bytes[i];
  }
  repl.screen[repl.length] = '\0';
}

/* Whether the "[0,2-3] " label that starts line holds rank. */
static int label_has_rank(const char* line, int rank) {
  const char* at = line + 1;
  while (*at != ']' && *at != '\0') {
    char* end = NULL;
    long first = strtol(at, &end, 10), last = first;
    if (end == at) return 0;
    if (*end == '-') last = strtol(end + 1, &end, 10);
    if (rank >= first && rank <= last) return 1;
    at = *end == ',' ? end + 1 : end;
  }
  return 0;
}

/* Waits until the screen shows text past the mark, and moves the mark past it. */
static void expect(const char* text, int bound_ms) {
  long long deadline = now_ms() + tt_timeout_ms(bound_ms);
  for (;;) {
    const char* found = strstr(repl.screen + repl.mark, text);
    if (found != NULL) {
      repl.mark = (size_t)(found - repl.screen) + strlen(text);
      return;
    }
    if (now_ms() > deadline) {
      cr_assert_fail("waited %d ms for \"%s\"; the screen after the mark:\n%s", bound_ms, text,
                     repl.screen + repl.mark);
    }
    pump(50);
  }
}

static void type(const char* keys) { cr_assert_eq(write(repl.master, keys, strlen(keys)), (ssize_t)strlen(keys)); }

/* libedit shows the prompt, then takes the terminal out of canonical mode; keys typed
 * in between can be lost in the switch (a Ctrl-D, notably), as they could be for a
 * very fast typist. Waits for the switch. */
static void wait_for_line_editor(void) {
  long long deadline = now_ms() + tt_timeout_ms(5000);
  struct termios mode;
  for (;;) {
    cr_assert_eq(tcgetattr(repl.master, &mode), 0);
    if ((mode.c_lflag & ICANON) == 0) return;
    if (now_ms() > deadline) cr_assert_fail("the line editor never took the terminal; screen:\n%s", repl.screen);
    pump(10);
  }
}

/* Types a line at the prompt and waits for its echo, so that what follows is its output. */
static void type_line(const char* line) {
  wait_for_line_editor();
  type(line);
  type("\r");
  expect(line, 5000);
  expect("\n", 5000);
}

static void start(int ranks, const char* extra_env) {
  repl.ranks = ranks;
  snprintf(repl.home, sizeof repl.home, "/tmp/tutti-repl-home-XXXXXX");
  cr_assert_not_null(mkdtemp(repl.home));
  struct winsize size = {.ws_row = 50, .ws_col = 160};
  pid_t parent = getpid();
  repl.pid = forkpty(&repl.master, NULL, NULL, &size);
  cr_assert_geq(repl.pid, 0, "forkpty: %s", strerror(errno));
  if (repl.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    setenv("HOME", repl.home, 1);
    setenv("TERM", "xterm", 1);
    if (extra_env != NULL) putenv((char*)extra_env);
    char count[8];
    snprintf(count, sizeof count, "%d", ranks);
    execl(TUTTI_TEST_LAUNCHER, "tutti", "run", "-n", count, (char*)NULL);
    _exit(127);
  }
  expect("Ctrl-D leaves.\n", 20000);
  expect("> ", 5000);
}

/* Asks every rank for its pid, so that the end of the test can check they are gone. */
static void learn_rank_pids(void) {
  type_line("io.open('/proc/self/stat'):read('n')");
  for (int rank = 0; rank < repl.ranks; ++rank) {
    char tag[16];
    snprintf(tag, sizeof tag, "[%d] ", rank);
    expect(tag, 5000);
    repl.rank_pids[rank] = atoi(repl.screen + repl.mark);
    cr_assert_gt(repl.rank_pids[rank], 0, "%s", repl.screen);
  }
  expect("> ", 5000);
}

static int running(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* file = fopen(path, "r");
  if (file == NULL) return 0;
  char state = 'Z';
  int ignored = fscanf(file, "%*d (%*[^)]) %c", &state);
  (void)ignored;
  fclose(file);
  return state != 'Z' && state != 'X';
}

/* Waits for the launcher to end, within bound_ms, and for every rank to be gone. */
static void expect_end(int want_status, int bound_ms) {
  long long deadline = now_ms() + tt_timeout_ms(bound_ms);
  while (repl.pid > 0) {
    pump(20);
    if (waitpid(repl.pid, &repl.status, WNOHANG) == repl.pid) repl.pid = 0;
    if (repl.pid > 0 && now_ms() > deadline) cr_assert_fail("the REPL did not end; screen:\n%s", repl.screen);
  }
  cr_assert(WIFEXITED(repl.status) && WEXITSTATUS(repl.status) == want_status, "wait status %#x; screen:\n%s",
            repl.status, repl.screen);
  for (int rank = 0; rank < repl.ranks; ++rank) {
    while (repl.rank_pids[rank] > 0 && running(repl.rank_pids[rank])) {
      if (now_ms() > deadline) cr_assert_fail("rank %d (pid %d) still runs", rank, repl.rank_pids[rank]);
      usleep(20000);
    }
  }
}

/* Ctrl-D at an empty prompt: every rank leaves, and the job's status is 0. */
static void leave(void) {
  wait_for_line_editor();
  type("\004");
  expect_end(0, 15000);
}

static void teardown(void) {
  for (int rank = 0; rank < repl.ranks; ++rank) {
    if (repl.rank_pids[rank] > 0 && running(repl.rank_pids[rank])) kill(repl.rank_pids[rank], SIGKILL);
  }
  if (repl.pid > 0) {
    kill(repl.pid, SIGKILL);
    waitpid(repl.pid, &repl.status, 0);
  }
  if (repl.master >= 0) close(repl.master);
  if (repl.home[0] != '\0') {
    char history[96];
    snprintf(history, sizeof history, "%s/.tutti_history", repl.home);
    unlink(history);
    rmdir(repl.home);
  }
}

TestSuite(repl, .fini = teardown, .timeout = 90);

Test(repl, results_are_grouped_by_rank_and_folded) {
  start(4, NULL);
  learn_rank_pids();
  type_line("tutti.rank() * 10");
  expect("[0] 0\n[1] 10\n[2] 20\n[3] 30\n> ", 10000);
  type_line("tutti.size()");
  expect("[0-3] 4\n> ", 10000);
  type_line("tutti.rank() % 2 == 0 and 'even' or 'odd'");
  expect("[0,2] even\n[1,3] odd\n> ", 10000);
  type_line("print('a', tutti.rank() < 2) io.write('no newline')");
  expect("[0,1] a\ttrue\n[0,1] no newline\n[2,3] a\tfalse\n[2,3] no newline\n> ", 10000);
  leave();
}

Test(repl, collectives_and_pictures_come_back_from_every_rank) {
  start(4, "NO_COLOR=1");
  learn_rank_pids();
  type_line("t = tutti.full({11, 11}, tutti.rank())");
  expect("> ", 5000);
  type_line("tutti.all_reduce(t, 'max')");
  expect("> ", 10000);
  type_line("t[1][1], t:sum()");
  expect("[0-3] 3.0\t363.0\n> ", 10000);
  type_line("t");
  expect("[0-3] [tutti.tensor float32 of size 11x11]\n> ", 10000);
  /* Without colour a picture is its numbers; each rank's under its own title. */
  type_line("tutti.full({2, 2}, tutti.rank(), 'int32'):show()");
  expect("rank 0   rank 1   rank 2   rank 3\n0 0      1 1      2 2      3 3\n0 0      1 1      2 2      3 3\n", 10000);
  expect("> ", 5000);
  /* A tensor in the world's shared memory, which outlives the world below. */
  type_line("m = tutti.mem_alloc({4}, 'int32') m:fill(tutti.rank())");
  expect("> ", 10000);
  /* TUTTI_CHECK is on in the REPL: a tensor of another size on rank 2 is a MISMATCH
   * naming it, on every rank, and tutti.world is made again. */
  type_line("u = tutti.zeros{tutti.rank() == 2 and 3 or 2}");
  type_line("tutti.all_reduce(u)");
  /* The same message on every rank, but for the rank it names as its own: one group. */
  expect("[0-3] TUTTI_ERR_MISMATCH: all_reduce #2 on comm \"repl.split0.color0\" (rank 0-3 of 4)", 10000);
  expect("rank 2 called all_reduce #2 count=3", 5000);
  expect("(tutti.world failed or was interrupted on ranks 0-3; every rank has a fresh one now)\n> ", 10000);
  type_line("s = tutti.ones{4} tutti.all_reduce(s) return s:sum()");
  expect("[0-3] 16.0\n> ", 10000);
  /* The old world's shared memory stays mapped while m lives. */
  type_line("m:sum()");
  expect("[0] 0\n[1] 4\n[2] 8\n[3] 12\n> ", 10000);
  type_line("m = nil collectgarbage() n = tutti.mem_alloc{4} n:fill(1) tutti.all_reduce(n) return n:sum()");
  expect("[0-3] 16.0\n> ", 10000);
  leave();
}

/* With a short op timeout: the ranks that called it fail with the runtime's message
 * naming rank 1, the REPL goes on, and the next collective works on a fresh world. */
Test(repl, a_collective_that_one_rank_skipped_times_out_naming_it) {
  start(4, "TUTTI_OP_TIMEOUT_MS=1500");
  learn_rank_pids();
  type_line("t = tutti.ones{4}");
  expect("> ", 5000);
  type_line("if tutti.rank() ~= 1 then tutti.all_reduce(t) end");
  size_t output_start = repl.mark;
  expect("timed out after 1500 ms; ranks that had not joined it: 1 (", 15000);
  expect("(tutti.world failed or was interrupted on ranks 0, 2, 3; every rank has a fresh one now)\n> ", 15000);
  char* output = strndup(repl.screen + output_start, repl.mark - output_start);
  /* Messages that differ only in the rank they come from are one group ("[0,3] ...
   * (rank 0,3 of 4) ..."); those that wait for another neighbour's data are another. */
  for (int rank = 0; rank < 4; ++rank) {
    int said = 0;
    for (const char* line = output; line != NULL && *line != '\0';
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
      if (*line == '[' && strncmp(strchr(line, ']'), "] TUTTI_ERR_TIMEOUT: all_reduce #1", 34) == 0) {
        said |= label_has_rank(line, rank);
      }
    }
    if (rank == 1) {
      cr_expect_not(said, "rank 1 skipped it and has nothing to say:\n%s", output);
    } else {
      cr_expect(said, "want rank %d's TUTTI_ERR_TIMEOUT: all_reduce #1 in:\n%s", rank, output);
    }
  }
  free(output);
  type_line("s = tutti.ones{4} tutti.all_reduce(s) return s:sum()");
  expect("[0-3] 16.0\n> ", 10000);
  leave();
}

/* Ctrl-C gets the ranks blocked in a collective out long before its 10 s timeout. */
/* A statement that fails on one rank before a collective the others are in: that rank
 * ends its world, so the others' wait fails at once, naming it, instead of at the op
 * timeout; then every rank has a fresh world. */
Test(repl, a_statement_failing_on_one_rank_frees_the_others_at_once) {
  start(4, "TUTTI_OP_TIMEOUT_MS=30000");
  learn_rank_pids();
  type_line("t = tutti.ones{4}");
  expect("> ", 5000);
  long long typed = now_ms();
  type_line("if tutti.rank() == 2 then error('boom') end tutti.all_reduce(t)");
  size_t output_start = repl.mark;
  expect("(tutti.world failed or was interrupted on ranks 0, 1, 3; every rank has a fresh one now)\n> ", 15000);
  long long took = now_ms() - typed;
  char* output = strndup(repl.screen + output_start, repl.mark - output_start);
  cr_expect(strstr(output, "[2] stdin:1: boom") != NULL, "%s", output);
  cr_expect(strstr(output, "TUTTI_ERR_PEER_LOST") != NULL && strstr(output, "rank 2 (host ") != NULL, "%s", output);
  free(output);
  cr_expect_lt(took, tt_timeout_ms(10000), "the others waited %lld ms; the op timeout is 30 s", took);
  type_line("s = tutti.ones{4} tutti.all_reduce(s) return s:sum()");
  expect("[0-3] 16.0\n> ", 10000);
  leave();
}

Test(repl, ctrl_c_gets_ranks_out_of_a_collective) {
  start(4, NULL);
  learn_rank_pids();
  type_line("t = tutti.ones{4}");
  expect("> ", 5000);
  type_line("if tutti.rank() ~= 1 then tutti.all_reduce(t) end");
  usleep(500000);
  long long interrupted_at = now_ms();
  type("\003");
  expect("[0,2,3] interrupted!\n", 10000);
  expect("(tutti.world failed or was interrupted on ranks 0, 2, 3; every rank has a fresh one now)\n> ", 10000);
  long long took = now_ms() - interrupted_at;
  cr_expect_lt(took, 8000, "Ctrl-C took %lld ms to end the statement, nearly the 10 s timeout", took);
  type_line("s = tutti.ones{4} tutti.all_reduce(s) return s:sum()");
  expect("[0-3] 16.0\n> ", 10000);
  leave();
}

Test(repl, multi_line_chunks_run_as_one) {
  start(3, NULL);
  learn_rank_pids();
  type_line("for i = 1, 3 do");
  expect(">> ", 5000);
  type_line("  print(i * 10)");
  expect(">> ", 5000);
  type_line("end");
  expect("[0-2] 10\n[0-2] 20\n[0-2] 30\n> ", 10000);
  /* A global function defined over three lines is there for the next chunk. */
  type_line("function twice(x)");
  type_line("return 2 * x");
  type_line("end");
  expect("> ", 5000);
  type_line("twice(tutti.rank())");
  expect("[0] 0\n[1] 2\n[2] 4\n> ", 10000);
  leave();
}

Test(repl, errors_show_and_the_repl_goes_on) {
  start(4, NULL);
  learn_rank_pids();
  type_line("if tutti.rank() == 1 then error('boom') end");
  size_t output_start = repl.mark;
  expect("[1] stdin:1: boom\n[1] stack traceback:\n", 10000);
  expect("> ", 5000);
  char* output = strndup(repl.screen + output_start, repl.mark - output_start);
  cr_assert(strstr(output, "[0") == NULL && strstr(output, "[2") == NULL && strstr(output, "[3") == NULL,
            "only rank 1 failed:\n%s", output);
  free(output);
  /* A syntax error is found on rank 0 and shown once, untagged. */
  type_line("x = = 1");
  expect("stdin:1: unexpected symbol near '='\n> ", 5000);
  type_line("tutti.rank()");
  expect("[0] 0\n[1] 1\n[2] 2\n[3] 3\n> ", 10000);
  leave();
}

Test(repl, ctrl_c_cancels_the_line_or_the_statement_on_every_rank) {
  start(4, NULL);
  learn_rank_pids();
  type_line("tutti.rank(");
  expect(">> ", 5000);
  wait_for_line_editor();
  type("\003");
  expect("\n> ", 5000);
  type_line("while true do end");
  usleep(300000);
  type("\003");
  expect("[0-3] interrupted!\n[0-3] stack traceback:\n", 10000);
  expect("(tutti.world failed or was interrupted on ranks 0-3; every rank has a fresh one now)\n> ", 10000);
  /* Programs that ranks started get it too (each rank's process group is signalled),
   * while the ranks themselves ignore it until the program ends, as system(3) does. */
  type_line("os.execute('sleep 30') return 'back'");
  usleep(300000);
  type("\003");
  expect("[0-3] back\n> ", 5000);
  type_line("tutti.size()");
  expect("[0-3] 4\n> ", 10000);
  leave();
}

Test(repl, ctrl_d_leaves_on_every_rank_and_keeps_the_history) {
  start(2, NULL);
  learn_rank_pids();
  type_line("answer = 6 * 7");
  expect("> ", 5000);
  leave();
  char path[96];
  snprintf(path, sizeof path, "%s/.tutti_history", repl.home);
  FILE* file = fopen(path, "r");
  cr_assert_not_null(file, "no %s", path);
  char text[4096] = {0};
  size_t got = fread(text, 1, sizeof text - 1, file);
  fclose(file);
  text[got] = '\0';
  /* libedit keeps entries vis(3)-encoded: answer\040=\0406\040*\0407. */
  cr_assert_not_null(strstr(text, "answer"), "history:\n%s", text);
}

/* The launcher puts the terminal back as it found it even when rank 0 dies while its
 * line editor has it in raw mode. */
Test(repl, terminal_is_restored_when_rank_0_dies) {
  start(2, NULL);
  learn_rank_pids();
  wait_for_line_editor();
  kill(repl.rank_pids[0], SIGKILL);
  expect_end(137, 15000);
  struct termios after;
  cr_assert_eq(tcgetattr(repl.master, &after), 0);
  cr_assert_neq(after.c_lflag & ICANON, 0, "canonical mode was not restored");
  cr_assert_neq(after.c_lflag & ECHO, 0, "echo was not restored");
}
