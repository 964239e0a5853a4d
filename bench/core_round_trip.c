/* core-round-trip: how long a cache line takes to go from one core to another and
 * back, between the first two CPUs this process may run on. Prints "<ns> ns".
 *
 * Small collectives between ranks on one node cost a few such transfers per call, so
 * their speed follows this number. On a virtual machine it can change while the
 * machine runs: this project's 2-core VM alternates between about 130 ns and about
 * 600 ns, for minutes to hours at a time, and at 600 ns both tutti and Open MPI are 2
 * to 4 times slower at 8 bytes. scripts/bench-vs-mpi.sh prints it before and after each run, so
 * that a table says in which state its rows were taken.
 *
 * Two threads pinned to one CPU each pass a counter back and forth through two
 * cache lines, 200000 times, after 20000 to warm up; exits 1 with a message when
 * fewer than two CPUs are available or a thread cannot be started or pinned, before
 * any ping (two threads spinning on one core could take minutes).
 *
 * core-round-trip --syscall prints instead what a bare system call takes (getppid,
 * the median of 20000): less than the 0.3-0.4 us of a bare yield on this project's VM
 * of most measurements, 1.0-1.1 us on a later one (a PVM guest, Linux 6.18), whose
 * system calls go through the hypervisor, where every yield, every poll of a socket
 * and every context switch costs that much more, and a wait's choices with them
 * (runtime/transport/core_sharing.cc).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kWarmup = 20000, kTrips = 200000 };

/* The two lines, each on 128 bytes of its own (the adjacent-line prefetcher). */
static alignas(128) _Atomic uint64_t ping;
static alignas(128) _Atomic uint64_t pong;

static int pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* 1 once the answering thread is pinned, 2 when it could not be. */
static _Atomic int answer_state;

static void* answer(void* cpu) {
  if (pin_to(*(int*)cpu) != 0) {
    atomic_store(&answer_state, 2);
    return NULL;
  }
  atomic_store(&answer_state, 1);
  for (uint64_t i = 1; i <= kWarmup + kTrips; ++i) {
    while (atomic_load_explicit(&ping, memory_order_acquire) < i) {
    }
    atomic_store_explicit(&pong, i, memory_order_release);
  }
  return NULL;
}

static double ns_between(struct timespec a, struct timespec b) {
  return (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int print_syscall(void) {
  enum { kCalls = 20000 };
  static double taken[kCalls];
  for (int i = 0; i < kCalls; ++i) {
    struct timespec before, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    syscall(SYS_getppid); /* not cached by the C library */
    clock_gettime(CLOCK_MONOTONIC, &after);
    taken[i] = ns_between(before, after);
  }
  qsort(taken, kCalls, sizeof taken[0], by_value);
  printf("%.0f ns\n", taken[kCalls / 2]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--syscall") == 0) return print_syscall();
  if (argc != 1) {
    fprintf(stderr, "usage: core-round-trip [--syscall]\n");
    return 2;
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    perror("core-round-trip: sched_getaffinity");
    return 1;
  }
  int cpus[2], found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus[found++] = cpu;
  }
  if (found < 2) {
    fprintf(stderr, "core-round-trip: this process may run on %d CPU; it needs two\n", found);
    return 1;
  }
  if (pin_to(cpus[0]) != 0) {
    fprintf(stderr, "core-round-trip: cannot pin to CPU %d\n", cpus[0]);
    return 1;
  }
  pthread_t other;
  if (pthread_create(&other, NULL, answer, &cpus[1]) != 0) {
    fprintf(stderr, "core-round-trip: cannot start a thread\n");
    return 1;
  }
  while (atomic_load(&answer_state) == 0) sched_yield();
  if (atomic_load(&answer_state) == 2) {
    fprintf(stderr, "core-round-trip: cannot pin to CPU %d\n", cpus[1]);
    return 1;
  }
  struct timespec start = {0, 0}, end;
  for (uint64_t i = 1; i <= kWarmup + kTrips; ++i) {
    if (i == kWarmup + 1) clock_gettime(CLOCK_MONOTONIC, &start);
    atomic_store_explicit(&ping, i, memory_order_release);
    while (atomic_load_explicit(&pong, memory_order_acquire) < i) {
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  pthread_join(other, NULL);
  printf("%.0f ns\n", ns_between(start, end) / kTrips);
  return 0;
}
