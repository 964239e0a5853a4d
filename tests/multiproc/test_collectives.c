/* Every collective, checked value by value in real processes under tutti launch:
 * coll_check's matrix in worlds of 1, 2, 3, 4, 5 and 8 ranks, once with the selector's
 * own choices and once for each set of forced algorithms (TUTTI_ALGO), which together
 * with recursive_forms name every algorithm of every collective.
 *
 * One launch per (world size, algorithm set); the program loops over the cases:
 * 9 collectives x 10 dtypes x 5 ops (reducing ones) x counts 0, 1, 7 x roots 0, last
 * and middle (rooted ones) x the four forms (plain, in place, async, in place + async),
 * plus count 70001, which is past the selector's 64 KiB latency/bandwidth switch for
 * 4-byte types and so runs the bandwidth algorithms' chunked paths. To keep the file
 * within a few minutes on 2 cores, 70001 runs only float32 and bfloat16 (every op:
 * 16-bit rounding along a ring and AVG's single division); the other dtypes share the
 * same data movement and kernels and are covered by the small counts. Another matrix
 * runs on buffers from tutti_mem_alloc, whose paths the first never takes, and a last
 * test a smaller one with TUTTI_CHECK=1, so that the fingerprint check is seen to pass
 * calls that agree; a random soak draws what the matrix leaves out. Most of the time is
 * the programs' own checks (coll_check.c keeps them fast): about 170 s on 2 busy cores
 * (ctest; tests/CMakeLists.txt gives it 900 s). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/launch_job.h"

/* Each entry forces one algorithm per collective; together with recursive_forms below,
 * they force every algorithm tutti has. NULL leaves the choice to the selector. */
static const char* const algorithm_sets[] = {
    NULL,
    "all_reduce=shm,reduce=shm,broadcast=shm,all_gather=shm,reduce_scatter=shm,gather=shm,scatter=shm,"
    "all_to_all=shm,barrier=shm",
    "all_reduce=ring,reduce=binomial,broadcast=binomial,all_gather=ring,reduce_scatter=ring,gather=linear,"
    "scatter=linear,all_to_all=pairwise,barrier=dissemination",
    "all_reduce=recursive_doubling,reduce=ring,broadcast=scatter_all_gather,all_gather=bruck,"
    "reduce_scatter=pairwise,gather=binomial,scatter=binomial,all_to_all=linear,barrier=dissemination",
};
#define ALGORITHM_SETS 4

typedef struct world {
  int size;
  int algorithms; /* index into algorithm_sets */
} world;

static tt_job job;
static void teardown(void) { tt_job_cleanup(&job); }

TestSuite(collectives, .fini = teardown);

/* Runs coll_check under `tutti launch -n size` (on `nodes` emulated nodes, unless 0) and
 * asserts that every rank ran the same number of cases, more than none, with no
 * failure. */
static void run_matrix_with(int size, int nodes, const char* const* settings, const char* algorithms, const char* check,
                            const char* const* args) {
  tt_job_cleanup(&job);
  tt_job_init(&job, size, tt_timeout_ms(170000) / 1000, "coll_check");
  tt_job_nodes(&job, nodes);
  for (const char* const* arg = args; *arg; ++arg) tt_job_arg(&job, "%s", *arg);
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=60000");
  for (const char* const* setting = settings; setting && *setting; ++setting) tt_job_env(&job, "%s", *setting);
  if (algorithms) tt_job_env(&job, "TUTTI_ALGO=%s", algorithms);
  if (check) tt_job_env(&job, "TUTTI_CHECK=%s", check);
  tt_job_run(&job, 180000);
  static const char* const needles[] = {"FAIL", "coll_check:", "tutti launch:", "[tutti]", NULL};
  cr_assert(job.ended, "-n %d did not end within 180 s: %s\n%s", size, tt_job_command(&job),
            tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "-n %d: failures: %s\n%s", size, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  cr_expect_eq(job.process.exit_code, 0, "-n %d exited %d: %s\n%s", size, job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  long first_cases = -1;
  for (int rank = 0; rank < size; ++rank) {
    /* By the rank in the communicator checked, whatever the launcher's tag: a grown
     * one numbers its joiners in the order they came. */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "] coll_check: rank %d ran ", rank);
    const char* found = strstr(job.output, prefix);
    cr_assert(found, "-n %d: rank %d printed no summary: %s\n%s", size, rank, tt_job_command(&job),
              tt_excerpt(job.output, needles));
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(found + strlen(prefix), "\n"), found + strlen(prefix));
    long cases = -1, failures = -1;
    cr_assert_eq(sscanf(line, "%ld cases, %ld failures", &cases, &failures), 2, "bad summary \"%s\"", line);
    cr_expect_eq(failures, 0, "-n %d: rank %d had %ld failures", size, rank, failures);
    cr_expect_gt(cases, 0, "-n %d: rank %d ran no case", size, rank);
    if (first_cases < 0) first_cases = cases;
    cr_expect_eq(cases, first_cases, "-n %d: rank %d ran %ld cases, rank 0 %ld", size, rank, cases, first_cases);
  }
  printf("collectives -n %d --nodes %d %s%s%s: %lld ms\n", size, nodes, settings ? "(settings) " : "",
         algorithms ? "TUTTI_ALGO=" : "selector", algorithms ? algorithms : "", job.took_ms);
}

static void run_matrix_on(int size, int nodes, const char* algorithms, const char* check, const char* const* args) {
  run_matrix_with(size, nodes, NULL, algorithms, check, args);
}

static void run_matrix(int size, const char* algorithms, const char* check, const char* const* args) {
  run_matrix_on(size, 0, algorithms, check, args);
}

ParameterizedTestParameters(collectives, matrix) {
  static world worlds[6 * ALGORITHM_SETS];
  static const int sizes[] = {1, 2, 3, 4, 5, 8};
  int n = 0;
  for (int s = 0; s < 6; ++s) {
    for (int a = 0; a < ALGORITHM_SETS; ++a) worlds[n++] = (world){sizes[s], a};
  }
  return cr_make_param_array(world, worlds, (size_t)n);
}

ParameterizedTest(world* w, collectives, matrix, .timeout = 200) {
  static const char* const args[] = {"--counts",         "0,1,7,70001", "--inplace", "--async", "--big-dtypes",
                                     "float32,bfloat16", "--big-ops",   "all",       NULL};
  run_matrix(w->size, algorithm_sets[w->algorithms], NULL, args);
}

/* The hierarchical collectives (shared memory within each emulated node, UCX between
 * them), all nine forced, on 2 nodes of 2 and 3 ranks, 3 nodes of 2 and 4 nodes of 2,
 * with the same matrix as above; count 70001 takes the rings between nodes, and on 4
 * nodes the recursive forms (recursive halving and doubling between the nodes for the
 * small counts, Rabenseifner's all_reduce of each node's slice for 70001). The
 * selector's own choices at the same layouts come last. */
typedef struct layout {
  int size;
  int nodes;
} layout;

ParameterizedTestParameters(collectives, hierarchical_matrix) {
  static layout layouts[] = {{4, 2}, {6, 2}, {6, 3}, {8, 4}};
  return cr_make_param_array(layout, layouts, sizeof layouts / sizeof layouts[0]);
}

ParameterizedTest(layout* l, collectives, hierarchical_matrix, .timeout = 200) {
  static const char* const args[] = {"--counts",         "0,1,7,70001", "--inplace", "--async", "--big-dtypes",
                                     "float32,bfloat16", "--big-ops",   "all",       NULL};
  run_matrix_on(
      l->size, l->nodes,
      "all_reduce=hierarchical,all_gather=hierarchical,reduce_scatter=hierarchical,broadcast=hierarchical,"
      "reduce=hierarchical,gather=hierarchical,scatter=hierarchical,barrier=hierarchical,all_to_all=hierarchical",
      NULL, args);
  run_matrix_on(l->size, l->nodes, NULL, NULL, args);
}

/* How many of rank 0's calls of `collective` in the trace folder `folder` (TUTTI_TRACE)
 * ran `algorithm`: each call is a "B" line naming it, then an "E" line with its
 * algorithm, one event a line; then removes the folder's files and the folder. */
static int traced_calls(const char* folder, const char* collective, const char* algorithm) {
  char name[64], want[64];
  snprintf(name, sizeof name, "\"name\":\"%s\"", collective);
  snprintf(want, sizeof want, "\"algorithm\":\"%s\"", algorithm);
  int calls = 0;
  DIR* dir = opendir(folder);
  cr_assert_not_null(dir, "no trace folder %s", folder);
  for (struct dirent* entry; (entry = readdir(dir)) != NULL;) {
    if (strncmp(entry->d_name, "rank-0.", 7) != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
    FILE* file = fopen(path, "r");
    cr_assert_not_null(file, "cannot read %s", path);
    char line[4096];
    int in_call = 0;
    while (fgets(line, sizeof line, file)) {
      if (strstr(line, "\"ph\":\"B\"")) in_call = strstr(line, name) != NULL;
      if (in_call && strstr(line, "\"ph\":\"E\"") && strstr(line, want)) ++calls;
    }
    fclose(file);
  }
  closedir(dir);
  return calls;
}

static void remove_folder(const char* folder) {
  DIR* dir = opendir(folder);
  for (struct dirent* entry; dir && (entry = readdir(dir)) != NULL;) {
    if (entry->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
    unlink(path);
  }
  if (dir) closedir(dir);
  rmdir(folder);
}

/* The selector where every rank has a CPU of its own (TUTTI_CPU_PER_RANK=yes: this
 * machine's ranks share 2 cores, so the count would say no): it takes the hierarchical
 * barrier, reduce, gather, scatter and all_to_all for the small counts and the flat
 * algorithms for 70001, on one communicator, nodes alike (4 on 2) and through the
 * leaders (5 on 2: all_reduce and broadcast too). Every rank's log says it found a CPU
 * per rank, and rank 0's trace shows the choices (without a CPU per rank, barrier and
 * the leaders' all_reduce are never hierarchical). */
ParameterizedTestParameters(collectives, selector_with_a_cpu_per_rank) {
  static layout layouts[] = {{4, 2}, {5, 2}};
  return cr_make_param_array(layout, layouts, sizeof layouts / sizeof layouts[0]);
}

ParameterizedTest(layout* l, collectives, selector_with_a_cpu_per_rank, .timeout = 200) {
  static const char* const args[] = {"--counts",         "0,1,7,70001", "--inplace", "--async", "--big-dtypes",
                                     "float32,bfloat16", "--big-ops",   "all",       NULL};
  char folder[] = "/tmp/tutti-cpu-per-rank-XXXXXX", trace[64];
  cr_assert_not_null(mkdtemp(folder));
  snprintf(trace, sizeof trace, "TUTTI_TRACE=%s", folder);
  const char* const settings[] = {"TUTTI_CPU_PER_RANK=yes", "TUTTI_LOG_LEVEL=info", trace, NULL};
  run_matrix_with(l->size, l->nodes, settings, NULL, NULL, args);
  static const char* const needles[] = {"a CPU per rank", "sharing CPUs", "FAIL", NULL};
  cr_expect_eq(tt_count(job.output, "ranks, a CPU per rank)"), l->size, "not every rank found a CPU per rank:\n%s",
               tt_excerpt(job.output, needles));
  const int barriers = traced_calls(folder, "barrier", "hierarchical");
  const int small = traced_calls(folder, l->nodes * 2 == l->size ? "gather" : "all_reduce", "hierarchical");
  const int large = traced_calls(folder, "all_reduce", "ring") + traced_calls(folder, "gather", "binomial") +
                    traced_calls(folder, "gather", "linear");
  remove_folder(folder);
  cr_expect_gt(barriers, 0, "no barrier of rank 0 was hierarchical");
  cr_expect_gt(small, 0, "no small call of rank 0 took the hierarchy");
  cr_expect_gt(large, 0, "no call of 70001 elements took a flat algorithm");
}

/* Nodes of different sizes (tutti launch -n 5 --nodes 2: 3 + 2 ranks; -n 7 --nodes 3:
 * 3 + 2 + 2; -n 5 --nodes 3: 2 + 2 + 1): all_reduce, broadcast, reduce and barrier
 * through each node's leader, forced (the selector does not take them), through the
 * same matrix. */
ParameterizedTestParameters(collectives, uneven_matrix) {
  static layout layouts[] = {{5, 2}, {7, 3}, {5, 3}};
  return cr_make_param_array(layout, layouts, sizeof layouts / sizeof layouts[0]);
}

ParameterizedTest(layout* l, collectives, uneven_matrix, .timeout = 200) {
  static const char* const args[] = {"--counts",         "0,1,7,70001", "--inplace", "--async", "--big-dtypes",
                                     "float32,bfloat16", "--big-ops",   "all",       NULL};
  run_matrix_on(l->size, l->nodes,
                "all_reduce=hierarchical,broadcast=hierarchical,reduce=hierarchical,barrier=hierarchical", NULL, args);
}

/* The matrix on a grown communicator (tutti_comm_grow, coll_check --grow): worlds of 2
 * and 3 grown by 1 and 2 on one node (shared memory), and a world of 3 grown by 1 on 2
 * emulated nodes, the joiner on the second (UCX between them). The summaries are
 * counted by the grown ranks, which every process prints. */
typedef struct grown {
  int size;
  int nodes;
  int grow; /* parameters are copied into the test's process: no pointers */
} grown;

ParameterizedTestParameters(collectives, grown_matrix) {
  static grown layouts[] = {{3, 0, 1}, {5, 0, 2}, {4, 2, 1}};
  return cr_make_param_array(grown, layouts, sizeof layouts / sizeof layouts[0]);
}

ParameterizedTest(grown* g, collectives, grown_matrix, .timeout = 200) {
  char grow[16];
  snprintf(grow, sizeof grow, "%d", g->grow);
  const char* const args[] = {
      "--counts", "0,1,7,70001", "--inplace", "--async", "--big-dtypes", "float32,bfloat16", "--big-ops",
      "all",      "--grow",      grow,        NULL};
  run_matrix_on(g->size, g->nodes, NULL, NULL, args);
}

/* The recursive forms: all_reduce by Rabenseifner's algorithm, all_gather by recursive
 * doubling, reduce_scatter by recursive halving, which the selector takes off one node
 * only, on some rank counts and sizes; forced through the same matrix for those three
 * collectives, on 4 and 8 ranks (a power of two), and on 3 and 6, where the ranks
 * beyond 2 and 4 fold in and out. */
ParameterizedTestParameters(collectives, recursive_forms) {
  static int sizes[] = {3, 4, 6, 8};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, collectives, recursive_forms, .timeout = 200) {
  static const char* const args[] = {
      "--collectives", "all_gather,reduce_scatter", "--counts",  "0,1,7,70001", "--inplace", "--async",
      "--big-dtypes",  "float32,bfloat16",          "--big-ops", "all",         NULL};
  run_matrix(*size, "all_reduce=rabenseifner,all_gather=recursive_doubling,reduce_scatter=recursive_halving", NULL,
             args);
}

/* Buffers from tutti_mem_alloc, where every collective reads and writes other ranks'
 * buffers in place from 64 KiB a block: count 70001 (70001 bytes of int8 and up),
 * every dtype and op, all four forms, through the selector (shm on one node). The
 * matrix above, on malloc'ed buffers, never takes those paths. About 45 s in all on
 * 2 cores. */
ParameterizedTestParameters(collectives, matrix_in_shared_memory) {
  static int sizes[] = {1, 2, 3, 4, 5, 8};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, collectives, matrix_in_shared_memory, .timeout = 200) {
  static const char* const args[] = {"--counts", "70001",     "--inplace", "--async",  "--big-dtypes",
                                     "all",      "--big-ops", "all",       "--shared", NULL};
  run_matrix(*size, NULL, NULL, args);
}

/* A soak of random cases (coll_check --random): every collective, all ten dtypes
 * (16-bit and 8-bit floats included) and every op at any count up to 70001, random roots
 * and forms, at 3 and 4 ranks: on malloc'ed buffers and on buffers from
 * tutti_mem_alloc through the selector (shared memory), and with algorithms that go
 * through UCX. TUTTI_SOAK_CASES sets how many cases a run draws (default 1000), for
 * longer soaks by hand. */
ParameterizedTestParameters(collectives, random_soak) {
  static int sizes[] = {3, 4};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, collectives, random_soak, .timeout = 200) {
  const char* cases = getenv("TUTTI_SOAK_CASES") ? getenv("TUTTI_SOAK_CASES") : "1000";
  const char* plain[] = {"--random", cases, "--seed", "29", "--counts", "70001", "--inplace", "--async", NULL};
  run_matrix(*size, NULL, NULL, plain);
  const char* shared[] = {"--random", cases,       "--seed",  "31",       "--counts",
                          "70001",    "--inplace", "--async", "--shared", NULL};
  run_matrix(*size, NULL, NULL, shared);
  const char* ucx[] = {"--random", cases, "--seed", "37", "--counts", "70001", "--inplace", "--async", NULL};
  run_matrix(*size, algorithm_sets[2], NULL, ucx);
}

/* The fingerprint check must let calls that agree through, results unchanged. */
Test(collectives, matrix_with_fingerprint_check, .timeout = 200) {
  static const char* const args[] = {"--counts", "0,7", "--ops", "sum,max", "--inplace", "--async", NULL};
  run_matrix(4, NULL, "1", args);
  run_matrix(3, algorithm_sets[2], "1", args);
}

/* Runs coll_linger ARGS on `ranks` ranks on 2 emulated nodes over TCP with 4 KiB socket
 * buffers (so that sockets fill and UCX holds a send's last bytes back) and a 15 s
 * operation timeout, and expects every rank to finish `operations` without a failure. */
static void run_linger(int ranks, const char* const* args, int operations) {
  tt_job_cleanup(&job);
  tt_job_init(&job, ranks, tt_timeout_ms(150000) / 1000, "coll_linger");
  tt_job_nodes(&job, 2);
  for (const char* const* arg = args; *arg; ++arg) tt_job_arg(&job, "%s", *arg);
  tt_job_env(&job, "UCX_TLS=tcp");
  tt_job_env(&job, "UCX_TCP_SNDBUF=4k");
  tt_job_env(&job, "UCX_TCP_RCVBUF=4k");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=15000");
  tt_job_run(&job, 160000);
  static const char* const needles[] = {"FAIL", "coll_linger:", "tutti launch:", "WARN", NULL};
  cr_assert(job.ended, "did not end within 160 s: %s\n%s", tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(job.process.exit_code, 0, "exited %d: %s\n%s", job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  char summary[64];
  snprintf(summary, sizeof summary, ", %d operations, 0 failures", operations);
  cr_expect_eq(tt_count(job.output, summary), ranks, "%s\n%s", tt_job_command(&job), tt_excerpt(job.output, needles));
  printf("collectives: %s %s on %d ranks, bytes held back by UCX: %lld ms\n", args[0], args[1], ranks, job.took_ms);
}

/* A rank that waits in shared memory must still let out the bytes UCX holds back: 8
 * ranks on 2 nodes, binomial reduces of 32 KiB whose leaves run ahead, then an
 * all_reduce whose first step is within each node. Without that, a leaf waited in
 * that step for its parent, which waited for the leaf's last bytes: every run of this
 * hung (it fails at the 15 s operation timeout); with it, a run takes 5-7 s here,
 * slowed by the tiny socket buffers. Batches of 5 reduces hang as surely as the 20
 * they used to be, which took 20-30 s (2026-11-29, the progress taken out again: 6
 * runs in 6 with 5, 2 in 2 with 20). */
Test(collectives, bytes_held_back_by_ucx_reach_a_parent_while_the_leaf_waits_in_its_node, .timeout = 200) {
  static const char* const args[] = {"reduce", "2", "5", "32768", NULL};
  run_linger(8, args, 10);
}

/* And so must a rank that waits on another communicator, whose waits drive only their
 * own transport: rank 1's 5 blocking sends of 32 KiB, read late, then a barrier on a
 * communicator split off, which rank 0 joins once it has them all. The idle thread of
 * rank 1's first communicator lets the bytes out; without it every run failed at the
 * 15 s receive timeout, with it one takes 2-3 s here. */
Test(collectives, bytes_held_back_by_ucx_reach_a_peer_while_the_sender_waits_on_another_comm, .timeout = 200) {
  static const char* const args[] = {"p2p", "5", "32768", NULL};
  run_linger(2, args, 5);
}
