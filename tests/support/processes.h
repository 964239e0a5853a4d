/* Real processes for the tests: started with extra environment, their output captured
 * in a file, waited on with a bound, and killed by PID. Each child gets
 * PR_SET_PDEATHSIG(SIGKILL), so that a test process killed by its own timeout takes
 * its children with it instead of leaving them running. */
#ifndef TUTTI_TESTS_SUPPORT_PROCESSES_H
#define TUTTI_TESTS_SUPPORT_PROCESSES_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tt_process {
  pid_t pid;     /* 0 once reaped */
  int exited;    /* 1 when it exited on its own or was killed, and was reaped */
  int exit_code; /* valid when exited and !signaled */
  int signaled;  /* the signal that ended it, 0 if none */
  char output_path[256];
} tt_process;

/* Scales a bound by TUTTI_TEST_TIMEOUT_MULTIPLIER (default 1), for slow machines. */
int tt_timeout_ms(int base_ms);

/* Starts argv[0] (a path) with argv, the current environment plus env_add ("NAME=value",
 * NULL-terminated, may be NULL), stdout and stderr together into a fresh file.
 * Returns 0, or -1 with errno. */
int tt_spawn(tt_process* process, char* const argv[], char* const env_add[]);

/* Forks a child that runs body(arg) and _exits with what it returns, its stdout and
 * stderr in a fresh file as tt_spawn's: for white-box tests whose ranks run the
 * runtime itself. Only the calling thread goes on in the child, so the caller must not
 * have started threads that the body needs (an event loop). Returns 0, or -1 with errno. */
typedef int (*tt_body_fn)(void* arg);
int tt_fork(tt_process* process, tt_body_fn body, void* arg);

/* Waits for it to end, at most timeout_ms. Returns 1 when it ended, 0 on timeout. */
int tt_wait(tt_process* process, int timeout_ms);

/* Sends sig to the process if it still runs (by PID, nothing else). */
void tt_signal(tt_process* process, int sig);

/* SIGKILL and reap, if still running; then removes the output file. */
void tt_cleanup(tt_process* process);

/* The whole captured output, NUL-terminated; free() it. Never NULL. */
char* tt_output(const tt_process* process);

/* Starts n processes of the same argv; env_for(rank, buffer) may fill extra variables.
 * A convenience over tt_spawn for the multi-rank tests. */
typedef void (*tt_env_fn)(int rank, char* const** env_add, void* user);
int tt_spawn_ranks(tt_process* processes, int n, char* const argv[], tt_env_fn env_for, void* user);

/* Waits for all, with one bound for the whole group; returns how many ended. */
int tt_wait_all(tt_process* processes, int n, int timeout_ms);
void tt_cleanup_all(tt_process* processes, int n);

/* A free TCP port on 127.0.0.1 in 20000..31999, below the kernel's ephemeral range, so
 * that no outgoing connection takes it before the test binds it (bound then released;
 * a random one, so that tests running beside each other pick different ports). */
int tt_free_port(void);

/* Waits until something accepts TCP connections on 127.0.0.1:port; 1 if so in time. */
int tt_wait_for_port(int port, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
