#define _GNU_SOURCE
#include "processes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

int tt_timeout_ms(int base_ms) {
  const char* text = getenv("TUTTI_TEST_TIMEOUT_MULTIPLIER");
  double factor = text ? atof(text) : 1.0;
  if (factor < 1.0) factor = 1.0;
  return (int)(base_ms * factor);
}

/* Forks a child with its stdout and stderr in a fresh file, which runs child(arg) and
 * never returns from it. */
static int start_child(tt_process* process, void (*child)(void*), void* arg) {
  memset(process, 0, sizeof *process);
  snprintf(process->output_path, sizeof process->output_path, "/tmp/tutti-test-out-XXXXXX");
  int out = mkstemp(process->output_path);
  if (out < 0) return -1;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(out);
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the parent died before prctl took hold */
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    close(out);
    child(arg);
    _exit(127);
  }
  close(out);
  process->pid = pid;
  return 0;
}

struct exec_args {
  char* const* argv;
  char* const* env_add;
};

static void exec_child(void* arg) {
  const struct exec_args* a = arg;
  for (char* const* entry = a->env_add; entry && *entry; ++entry) putenv(*entry);
  execv(a->argv[0], a->argv);
  fprintf(stderr, "tt_spawn: cannot exec %s: %s\n", a->argv[0], strerror(errno));
}

int tt_spawn(tt_process* process, char* const argv[], char* const env_add[]) {
  struct exec_args a = {argv, env_add};
  return start_child(process, exec_child, &a);
}

struct body_args {
  tt_body_fn body;
  void* arg;
};

static void body_child(void* arg) {
  const struct body_args* a = arg;
  setvbuf(stdout, NULL, _IOLBF, 0); /* what it printed survives a kill */
  int code = a->body(a->arg);
  fflush(stdout);
  fflush(stderr);
  _exit(code);
}

int tt_fork(tt_process* process, tt_body_fn body, void* arg) {
  struct body_args a = {body, arg};
  return start_child(process, body_child, &a);
}

static void record_status(tt_process* process, int status) {
  process->exited = 1;
  process->pid = 0;
  if (WIFSIGNALED(status)) {
    process->signaled = WTERMSIG(status);
  } else {
    process->exit_code = WEXITSTATUS(status);
  }
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tt_wait(tt_process* process, int timeout_ms) { return tt_wait_all(process, 1, timeout_ms) == 1; }

int tt_wait_all(tt_process* processes, int n, int timeout_ms) {
  long long deadline = now_ms() + timeout_ms;
  for (;;) {
    int ended = 0;
    for (int i = 0; i < n; ++i) {
      tt_process* p = &processes[i];
      if (!p->exited && p->pid > 0) {
        int status;
        if (waitpid(p->pid, &status, WNOHANG) == p->pid) record_status(p, status);
      }
      if (p->exited) ++ended;
    }
    if (ended == n || now_ms() >= deadline) return ended;
    usleep(5000);
  }
}

void tt_signal(tt_process* process, int sig) {
  if (!process->exited && process->pid > 0) kill(process->pid, sig);
}

void tt_cleanup(tt_process* process) {
  if (!process->exited && process->pid > 0) {
    kill(process->pid, SIGKILL);
    int status;
    if (waitpid(process->pid, &status, 0) == process->pid) record_status(process, status);
  }
  if (process->output_path[0]) unlink(process->output_path);
  process->output_path[0] = '\0';
}

void tt_cleanup_all(tt_process* processes, int n) {
  for (int i = 0; i < n; ++i) tt_cleanup(&processes[i]);
}

char* tt_output(const tt_process* process) {
  FILE* file = fopen(process->output_path, "rb");
  if (!file) return strdup("");
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char* text = malloc((size_t)size + 1);
  size_t got = fread(text, 1, (size_t)size, file);
  text[got] = '\0';
  fclose(file);
  return text;
}

int tt_spawn_ranks(tt_process* processes, int n, char* const argv[], tt_env_fn env_for, void* user) {
  for (int rank = 0; rank < n; ++rank) {
    char* const* env_add = NULL;
    if (env_for) env_for(rank, &env_add, user);
    if (tt_spawn(&processes[rank], argv, env_add) != 0) return -1;
  }
  return 0;
}

/* Whether port can be bound on loopback now (0: any port; *bound gets the one taken). */
static int bindable(int port, int* bound) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);
  socklen_t len = sizeof addr;
  int ok = bind(fd, (struct sockaddr*)&addr, sizeof addr) == 0 && getsockname(fd, (struct sockaddr*)&addr, &len) == 0;
  if (ok && bound != NULL) *bound = ntohs(addr.sin_port);
  close(fd);
  return ok;
}

/* Below Linux's ephemeral range (32768 and up by default): a port there is never taken
 * as the source port of some outgoing connection between this probe and the bind that
 * follows it, which tests running beside it (gloo opens hundreds) made happen. */
int tt_free_port(void) {
  static unsigned seed;
  if (seed == 0) {
    /* pid ^ ms gave two tests of one program, started 2 ms apart with pids 2 apart,
     * the same seed, hence the same port: spread the pid over every bit first. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed = ((unsigned)getpid() * 2654435761u) ^ (unsigned)ts.tv_nsec ^ (unsigned)ts.tv_sec;
    if (seed == 0) seed = 1;
  }
  for (int tries = 0; tries < 200; ++tries) {
    int port = 20000 + (int)(rand_r(&seed) % 12000);
    if (bindable(port, NULL)) return port;
  }
  int port = -1;
  return bindable(0, &port) ? port : -1;
}

int tt_wait_for_port(int port, int timeout_ms) {
  long long deadline = now_ms() + timeout_ms;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons((uint16_t)port);
  while (now_ms() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int connected = connect(fd, (struct sockaddr*)&addr, sizeof addr) == 0;
    close(fd);
    if (connected) return 1;
    usleep(10000);
  }
  return 0;
}
