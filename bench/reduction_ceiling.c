/* reduction-ceiling: the machine's ceiling for a reducing collective on one node, to
 * print beside the libraries' large rows (scripts/bench-vs-mpi.sh).
 *
 *   reduction-ceiling all_reduce|reduce_scatter RANKS [-b MIN] [-e MAX] [-f FACTOR]
 *
 * What the ranks' buffers must at least go through, done in one process by one
 * thread per CPU (at most RANKS), each over its own share of the elements, once with
 * plain stores and once with streaming stores (which skip the cache: slower where the
 * buffers fit in it, faster where they do not), the faster of the two counting:
 * all_reduce reads the RANKS inputs of SIZE bytes and writes the sum into
 * RANKS outputs; reduce_scatter reads the RANKS inputs of SIZE bytes (the whole
 * array, as the benchmarks count it) and writes one sum of SIZE bytes, each rank's
 * block. No library can move and add the same bytes faster on this machine: one pass,
 * no copies, no synchronisation but the start and end of each pass. float32 sum.
 *
 * Prints "# reduction-ceiling ..." then one "SIZE US STORES" line per size (STORES:
 * plain or streaming, the faster), the mean of the timed passes (about 0.2 s of them, at least 3, after one untimed
 * pass that faults the pages in). Sizes are in bytes, from MIN to MAX (default 64K to 64M), times FACTOR (4); K, M and
 * G suffixes are read.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { kMaxRanks = 64, kMaxThreads = 64 };

typedef struct {
  int all_reduce; /* 1: all_reduce, 0: reduce_scatter */
  int streaming;  /* 1: streaming stores, 0: plain */
  int ranks;
  size_t elements; /* per input */
  float* inputs[kMaxRanks];
  float* outputs[kMaxRanks]; /* all_reduce: one per rank; reduce_scatter: outputs[0] */
} Job;

/* A sense-reversing barrier that spins: every thread has a CPU of its own. */
typedef struct {
  _Atomic int waiting;
  _Atomic int sense;
  int threads;
} Barrier;

static void barrier_wait(Barrier* barrier, int* my_sense) {
  *my_sense = !*my_sense;
  if (atomic_fetch_add(&barrier->waiting, 1) + 1 == barrier->threads) {
    atomic_store(&barrier->waiting, 0);
    atomic_store(&barrier->sense, *my_sense);
    return;
  }
  while (atomic_load(&barrier->sense) != *my_sense) {
  }
}

typedef struct {
  const Job* job;
  size_t begin, end; /* elements, multiples of 8 */
  Barrier* barrier;
  int passes;
} Share;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One pass over [begin, end): sums the inputs and stores the sum into every output
 * (all_reduce) or the one (reduce_scatter), 8 floats at a time with AVX where the CPU
 * has it, else 4 with SSE2. The pointers are copied into locals first, so that the
 * stores cannot make the compiler reload them, and 2 ranks, the common case, get a
 * loop of their own. */
#define PASS_LOOP(VEC, WIDTH, LOAD, ADD, STORE)                          \
  do {                                                                   \
    if (ranks == 2) {                                                    \
      for (size_t i = begin; i < end; i += WIDTH) {                      \
        VEC sum = ADD(LOAD(in[0] + i), LOAD(in[1] + i));                 \
        for (int o = 0; o < outputs; ++o) STORE(out[o] + i, sum);        \
      }                                                                  \
    } else {                                                             \
      for (size_t i = begin; i < end; i += WIDTH) {                      \
        VEC sum = LOAD(in[0] + i);                                       \
        for (int r = 1; r < ranks; ++r) sum = ADD(sum, LOAD(in[r] + i)); \
        for (int o = 0; o < outputs; ++o) STORE(out[o] + i, sum);        \
      }                                                                  \
    }                                                                    \
  } while (0)

#define PASS_SETUP                                        \
  const int ranks = job->ranks;                           \
  const int outputs = job->all_reduce ? ranks : 1;        \
  const float* in[kMaxRanks];                             \
  float* out[kMaxRanks];                                  \
  for (int r = 0; r < ranks; ++r) in[r] = job->inputs[r]; \
  for (int o = 0; o < outputs; ++o) out[o] = job->outputs[o]

#if defined(__x86_64__)
__attribute__((target("avx"))) static void pass_avx(const Job* job, size_t begin, size_t end) {
  PASS_SETUP;
  if (job->streaming) {
    PASS_LOOP(__m256, 8, _mm256_load_ps, _mm256_add_ps, _mm256_stream_ps);
    _mm_sfence();
  } else {
    PASS_LOOP(__m256, 8, _mm256_load_ps, _mm256_add_ps, _mm256_store_ps);
  }
}

static void pass_sse(const Job* job, size_t begin, size_t end) {
  PASS_SETUP;
  if (job->streaming) {
    PASS_LOOP(__m128, 4, _mm_load_ps, _mm_add_ps, _mm_stream_ps);
    _mm_sfence();
  } else {
    PASS_LOOP(__m128, 4, _mm_load_ps, _mm_add_ps, _mm_store_ps);
  }
}

static void pass(const Job* job, size_t begin, size_t end) {
  static int avx = -1;
  if (avx < 0) avx = __builtin_cpu_supports("avx");
  if (avx)
    pass_avx(job, begin, end);
  else
    pass_sse(job, begin, end);
}
#else
static void pass(const Job* job, size_t begin, size_t end) {
  PASS_SETUP;
  for (size_t i = begin; i < end; ++i) {
    float sum = in[0][i];
    for (int r = 1; r < ranks; ++r) sum += in[r][i];
    for (int o = 0; o < outputs; ++o) out[o][i] = sum;
  }
}
#endif

static void* run_share(void* arg) {
  Share* share = arg;
  int sense = 0;
  for (int p = 0; p < share->passes; ++p) {
    barrier_wait(share->barrier, &sense);
    pass(share->job, share->begin, share->end);
    barrier_wait(share->barrier, &sense);
  }
  return NULL;
}

static int usable_cpus(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

static size_t parse_bytes(const char* text) {
  char* end = NULL;
  double value = strtod(text, &end);
  if (end == text || value < 0) {
    fprintf(stderr, "reduction-ceiling: \"%s\" is not a size; give bytes, e.g. 64K or 16M\n", text);
    exit(2);
  }
  switch (*end) {
    case 'K':
    case 'k': value *= 1024; break;
    case 'M':
    case 'm': value *= 1024 * 1024; break;
    case 'G':
    case 'g': value *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return (size_t)value;
}

static float* allocate(size_t bytes) {
  float* memory = aligned_alloc(64, bytes == 0 ? 64 : (bytes + 63) / 64 * 64);
  if (memory == NULL) {
    fprintf(stderr, "reduction-ceiling: cannot allocate %zu bytes\n", bytes);
    exit(1);
  }
  return memory;
}

/* Seconds per pass over job with `threads` threads, `passes` of them timed. */
static double time_passes(const Job* job, int threads, int passes) {
  Barrier barrier = {.threads = threads};
  Share shares[kMaxThreads];
  pthread_t ids[kMaxThreads];
  const size_t vectors = job->elements / 8; /* whole AVX vectors, so every share is one */
  for (int t = 0; t < threads; ++t) {
    shares[t] = (Share){job, vectors * (size_t)t / (size_t)threads * 8, vectors * (size_t)(t + 1) / (size_t)threads * 8,
                        &barrier, passes};
  }
  for (int t = 1; t < threads; ++t) {
    if (pthread_create(&ids[t], NULL, run_share, &shares[t]) != 0) {
      fprintf(stderr, "reduction-ceiling: cannot start thread %d\n", t);
      exit(1);
    }
  }
  double started = 0;
  int sense = 0;
  for (int p = 0; p < passes; ++p) {
    barrier_wait(&barrier, &sense);
    if (p == 0) started = now_s();
    pass(job, shares[0].begin, shares[0].end);
    barrier_wait(&barrier, &sense);
  }
  double elapsed = now_s() - started;
  for (int t = 1; t < threads; ++t) pthread_join(ids[t], NULL);
  return elapsed / passes;
}

int main(int argc, char** argv) {
  if (argc < 3 || (strcmp(argv[1], "all_reduce") != 0 && strcmp(argv[1], "reduce_scatter") != 0)) {
    fprintf(stderr, "usage: reduction-ceiling all_reduce|reduce_scatter RANKS [-b MIN] [-e MAX] [-f FACTOR]\n");
    return 2;
  }
  Job job = {.all_reduce = strcmp(argv[1], "all_reduce") == 0, .ranks = atoi(argv[2])};
  if (job.ranks < 1 || job.ranks > kMaxRanks) {
    fprintf(stderr, "reduction-ceiling: RANKS \"%s\" is not in [1, %d]\n", argv[2], kMaxRanks);
    return 2;
  }
  size_t min = 64 * 1024, max = 64 * 1024 * 1024, factor = 4;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-b") == 0)
      min = parse_bytes(argv[i + 1]);
    else if (strcmp(argv[i], "-e") == 0)
      max = parse_bytes(argv[i + 1]);
    else if (strcmp(argv[i], "-f") == 0)
      factor = parse_bytes(argv[i + 1]);
    else {
      fprintf(stderr, "reduction-ceiling: unknown option \"%s\"\n", argv[i]);
      return 2;
    }
  }
  if (factor < 2) factor = 2;
  int threads = usable_cpus();
  if (threads > job.ranks) threads = job.ranks;
  if (threads > kMaxThreads) threads = kMaxThreads;
#if defined(__x86_64__)
  const int variants = 2;
#else
  const int variants = 1; /* plain stores only */
#endif
  printf("# reduction-ceiling %s, %d ranks, %d threads, float32 sum\n", argv[1], job.ranks, threads);
  /* Sizes as the benchmarks count them: all_reduce's per rank, reduce_scatter's the
   * whole array, which each rank holds as its input. */
  for (size_t size = min; size <= max && size > 0; size *= factor) {
    job.elements = size / sizeof(float) / 8 * 8;
    const int outputs = job.all_reduce ? job.ranks : 1;
    for (int r = 0; r < job.ranks; ++r) {
      job.inputs[r] = allocate(job.elements * sizeof(float));
      for (size_t i = 0; i < job.elements; ++i) job.inputs[r][i] = (float)((r + i) % 7);
    }
    for (int o = 0; o < outputs; ++o) job.outputs[o] = allocate(job.elements * sizeof(float));
    double best = 0;
    int best_streaming = 0;
    for (int v = 0; v < variants; ++v) {
      job.streaming = v;
      double first = time_passes(&job, threads, 1); /* faults the outputs in */
      int passes = first > 0 ? (int)(0.1 / first) : 1000;
      if (passes < 3) passes = 3;
      if (passes > 1000) passes = 1000;
      double seconds = time_passes(&job, threads, passes);
      if (v == 0 || seconds < best) {
        best = seconds;
        best_streaming = v;
      }
    }
    printf("%zu %.2f %s\n", size, best * 1e6, best_streaming ? "streaming" : "plain");
    fflush(stdout);
    for (int r = 0; r < job.ranks; ++r) free(job.inputs[r]);
    for (int o = 0; o < outputs; ++o) free(job.outputs[o]);
  }
  return 0;
}
