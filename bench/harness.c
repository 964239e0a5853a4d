/* harness.c: options, buffers, the timing loop, the check and the table; see harness.h.
 *
 * Sizes follow nccl-tests (doc/PERFORMANCE.md): "size" is the bytes of one rank's
 * buffer for all_reduce, broadcast and reduce, and the bytes of the whole array
 * (count per rank * ranks * element size) for all_gather, reduce_scatter, gather,
 * scatter and all_to_all. algbw = size / time; busbw = algbw * 2(n-1)/n for
 * all_reduce, * (n-1)/n for the whole-array collectives, * 1 for broadcast and reduce.
 */
#define _POSIX_C_SOURCE 200112L

#include "harness.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti_float16.h"
#include "tutti_float8.h"

/* ---------------------------------------------------------------- names */

static const char* const coll_names[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce",
                                         "gather",     "scatter",   "all_to_all", "barrier",        "sendrecv"};
static const char* const dtype_names[] = {"int8",     "uint8",   "int32",   "int64",       "float16",
                                          "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2"};
static const size_t dtype_sizes[] = {1, 1, 4, 8, 2, 2, 4, 8, 1, 1};
static const char* const op_names[] = {"sum", "prod", "min", "max", "avg"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
/* -B: the most timed blocks a row takes. */
#define MAX_BLOCKS 64

static int find_name(const char* const* names, size_t n, const char* name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return (int)i;
  return -1;
}

static int parse_dtype(const char* name) {
  static const struct {
    const char* alias;
    bench_dtype dtype;
  } aliases[] = {{"float", BENCH_FLOAT32},    {"double", BENCH_FLOAT64},  {"half", BENCH_FLOAT16},
                 {"fp16", BENCH_FLOAT16},     {"bf16", BENCH_BFLOAT16},   {"int", BENCH_INT32},
                 {"e4m3", BENCH_FLOAT8_E4M3}, {"e5m2", BENCH_FLOAT8_E5M2}};
  for (size_t i = 0; i < COUNT_OF(aliases); i++)
    if (strcmp(aliases[i].alias, name) == 0) return (int)aliases[i].dtype;
  return find_name(dtype_names, COUNT_OF(dtype_names), name);
}

static int is_rooted(bench_coll coll) {
  return coll == BENCH_BROADCAST || coll == BENCH_REDUCE || coll == BENCH_GATHER || coll == BENCH_SCATTER;
}
int bench_reduces(bench_coll coll) {
  return coll == BENCH_ALL_REDUCE || coll == BENCH_REDUCE_SCATTER || coll == BENCH_REDUCE;
}
/* The collectives whose nccl-tests size is the whole array, count per rank * ranks. */
static int size_is_whole_array(bench_coll coll) {
  return coll == BENCH_ALL_GATHER || coll == BENCH_REDUCE_SCATTER || coll == BENCH_GATHER || coll == BENCH_SCATTER ||
         coll == BENCH_ALL_TO_ALL;
}

static double busbw_factor(bench_coll coll, int n) {
  if (coll == BENCH_ALL_REDUCE) return 2.0 * (n - 1) / n;
  if (size_is_whole_array(coll)) return (double)(n - 1) / n;
  return 1.0;
}

/* ---------------------------------------------------------------- options */

typedef struct options {
  bench_case c;
  size_t min_bytes, max_bytes;
  double factor;
  long warmup; /* -1: adaptive */
  long iters;  /* -1: adaptive */
  int blocks;  /* timed blocks of iters calls each; the median block is reported */
  int check;
  int device; /* -m device */
  int shared; /* -m shared */
} options;

/* 1 GiB at most, "8", "64K", "64M", "1G" (powers of 1024, as nccl-tests). */
static int parse_bytes(const char* text, size_t* out) {
  char* end;
  unsigned long long value = strtoull(text, &end, 10);
  if (end == text) return -1;
  unsigned long long unit = 1;
  if (*end == 'K' || *end == 'k') unit = 1ull << 10;
  if (*end == 'M' || *end == 'm') unit = 1ull << 20;
  if (*end == 'G' || *end == 'g') unit = 1ull << 30;
  if (unit != 1) end++;
  if (*end != '\0' || value > (1ull << 30) / unit) return -1;
  *out = (size_t)(value * unit);
  return 0;
}

static void usage(FILE* to, const char* program) {
  fprintf(to,
          "usage: %s OPERATION [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-w WARMUP] [-n ITERS] [-B BLOCKS]\n"
          "         [-d DTYPE] [-o OP] [-r ROOT] [-c 0|1] [-a 0|1] [-i 0|1] [-m host|shared|device]\n"
          "  OPERATION  all_reduce broadcast all_gather reduce_scatter reduce gather scatter\n"
          "             all_to_all barrier; sendrecv, point to point: each rank exchanges\n"
          "             its buffer with rank ^ 1 (an even number of ranks)\n"
          "  -b, -e     sizes in bytes, suffix K, M or G (default 8 and 64M): one rank's buffer\n"
          "             for all_reduce, broadcast and reduce, the whole array (count per rank x\n"
          "             ranks) for the others, as nccl-tests\n"
          "  -f         multiply the size by FACTOR between rows (default 4)\n"
          "  -w, -n     warmup and timed iterations per size (default: adaptive, from 1000 for\n"
          "             small sizes down to 5, about 512 MiB moved per size)\n"
          "  -B         time BLOCKS blocks of ITERS calls each, every block after a barrier, and\n"
          "             report the median block (default 1, at most %d): steadier for calls of a\n"
          "             microsecond or less, which a moment's disturbance moves by tens of percent\n"
          "  -d         int8 uint8 int32 int64 float16 bfloat16 float32 float64 float8_e4m3\n"
          "             float8_e5m2 (default float32)\n"
          "  -o         sum prod min max avg (default sum)\n"
          "  -r         root of broadcast, reduce, gather and scatter (default 0)\n"
          "  -c         check one untimed run against values computed locally (default 1)\n"
          "  -a         issue each operation asynchronously (work/request), then wait (default 0)\n"
          "  -i         all_reduce in place, send = recv, as torch runs it: each call then reads\n"
          "             what the one before wrote, where out of place it reads an unchanged\n"
          "             send buffer (default 0)\n"
          "  -m         buffers in host memory (default), host memory from the library's\n"
          "             allocator (shared: tutti_mem_alloc, MPI_Alloc_mem), or CUDA device memory;\n"
          "             device values are prepared and checked on the host, copied outside the\n"
          "             timed runs\n",
          program, MAX_BLOCKS);
}

int bench_help(int argc, char** argv, const char* program) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout, program);
      return 1;
    }
  }
  return 0;
}

/* Returns 0, or prints why on rank 0 and returns BENCH_EXIT_USAGE. */
static int parse_options(int argc, char** argv, const bench_backend* b, options* o) {
  memset(o, 0, sizeof *o);
  o->c.dtype = BENCH_FLOAT32;
  o->c.op = BENCH_SUM;
  o->c.root = 0;
  o->min_bytes = 8;
  o->max_bytes = 64u << 20;
  o->factor = 4;
  o->warmup = o->iters = -1;
  o->blocks = 1;
  o->check = 1;
  /* Every rank says why it refuses its arguments (on stderr), not rank 0 alone: a
   * launcher that sees one rank exit with an error stops the others, and rank 0 could
   * be stopped before it had said anything (tutti launch did so to bench.harness in CI). */
  int coll = -1;
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    if (arg[0] != '-') {
      coll = find_name(coll_names, COUNT_OF(coll_names), arg);
      if (coll < 0) {
        fprintf(stderr, "%s: unknown operation \"%s\"; try --help\n", b->program, arg);
        return BENCH_EXIT_USAGE;
      }
      continue;
    }
    const char* value = arg[1] && arg[2] ? arg + 2 : (i + 1 < argc ? argv[++i] : NULL);
    if (!value || arg[1] == '\0' || !strchr("befwnBdorcami", arg[1])) {
      fprintf(stderr, "%s: bad option \"%s\"%s; try --help\n", b->program, arg, value ? "" : " (no value)");
      return BENCH_EXIT_USAGE;
    }
    char* end = NULL;
    int ok = 1, index;
    switch (arg[1]) {
      case 'b': ok = parse_bytes(value, &o->min_bytes) == 0; break;
      case 'e': ok = parse_bytes(value, &o->max_bytes) == 0; break;
      case 'f':
        o->factor = strtod(value, &end);
        ok = *end == '\0' && o->factor > 1;
        break;
      case 'w':
        o->warmup = strtol(value, &end, 10);
        ok = *end == '\0' && o->warmup >= 0;
        break;
      case 'n':
        o->iters = strtol(value, &end, 10);
        ok = *end == '\0' && o->iters > 0;
        break;
      case 'B':
        o->blocks = (int)strtol(value, &end, 10);
        ok = *end == '\0' && o->blocks >= 1 && o->blocks <= MAX_BLOCKS;
        break;
      case 'd':
        index = parse_dtype(value);
        ok = index >= 0;
        o->c.dtype = (bench_dtype)(ok ? index : 0);
        break;
      case 'o':
        index = find_name(op_names, COUNT_OF(op_names), value);
        ok = index >= 0;
        o->c.op = (bench_op)(ok ? index : 0);
        break;
      case 'r':
        o->c.root = (int)strtol(value, &end, 10);
        ok = *end == '\0' && o->c.root >= 0 && o->c.root < b->size;
        break;
      case 'c':
        o->check = (int)strtol(value, &end, 10);
        ok = *end == '\0';
        break;
      case 'a':
        o->c.async = (int)strtol(value, &end, 10);
        ok = *end == '\0';
        break;
      case 'i':
        o->c.in_place = (int)strtol(value, &end, 10);
        ok = *end == '\0';
        break;
      case 'm':
        o->device = strcmp(value, "device") == 0;
        o->shared = strcmp(value, "shared") == 0;
        ok = o->device || o->shared || strcmp(value, "host") == 0;
        break;
    }
    if (!ok) {
      fprintf(stderr, "%s: bad value \"%s\" for -%c; try --help\n", b->program, value, arg[1]);
      return BENCH_EXIT_USAGE;
    }
  }
  if (coll < 0) {
    if (b->rank == 0) {
      usage(stderr, b->program);
    } else {
      fprintf(stderr, "%s: no operation given; try --help\n", b->program);
    }
    return BENCH_EXIT_USAGE;
  }
  o->c.coll = (bench_coll)coll;
  if (!is_rooted(o->c.coll)) o->c.root = -1;
  o->c.peer = -1;
  if (o->c.coll == BENCH_SENDRECV) {
    if (b->size % 2 != 0) {
      fprintf(stderr, "%s: sendrecv pairs rank r with rank r ^ 1: run an even number of ranks, not %d\n", b->program,
              b->size);
      return BENCH_EXIT_USAGE;
    }
    o->c.peer = b->rank ^ 1;
  }
  if (o->shared && !b->shared_alloc) {
    fprintf(stderr, "%s: -m shared: this library has no allocator of its own\n", b->program);
    return BENCH_EXIT_USAGE;
  }
  if (o->device && !b->device_alloc) {
    fprintf(stderr, "%s: -m device: this build has no device memory (built without CUDA)\n", b->program);
    return BENCH_EXIT_USAGE;
  }
  if (o->c.in_place && o->c.coll != BENCH_ALL_REDUCE) {
    fprintf(stderr, "%s: -i 1 runs all_reduce in place; the other operations run out of place\n", b->program);
    return BENCH_EXIT_USAGE;
  }
  if (o->min_bytes > o->max_bytes) {
    fprintf(stderr, "%s: -b %zu is larger than -e %zu\n", b->program, o->min_bytes, o->max_bytes);
    return BENCH_EXIT_USAGE;
  }
  const char* why = b->unsupported(b->self, &o->c);
  if (why) {
    fprintf(stderr, "%s: cannot run %s with %s/%s: %s\n", b->program, coll_names[coll], dtype_names[o->c.dtype],
            op_names[o->c.op], why);
    return BENCH_EXIT_USAGE;
  }
  return 0;
}

/* ---------------------------------------------------------------- elements */

/* Integers wrap as the C conversions do on every compiler we build with. */
static void store(bench_dtype dtype, void* buffer, size_t i, double value) {
  switch (dtype) {
    case BENCH_INT8: ((int8_t*)buffer)[i] = (int8_t)(int64_t)value; break;
    case BENCH_UINT8: ((uint8_t*)buffer)[i] = (uint8_t)(int64_t)value; break;
    case BENCH_INT32: ((int32_t*)buffer)[i] = (int32_t)(int64_t)value; break;
    case BENCH_INT64: ((int64_t*)buffer)[i] = (int64_t)value; break;
    case BENCH_FLOAT16: ((uint16_t*)buffer)[i] = tutti_float16_from_double(value); break;
    case BENCH_BFLOAT16: ((uint16_t*)buffer)[i] = tutti_bfloat16_from_double(value); break;
    case BENCH_FLOAT32: ((float*)buffer)[i] = (float)value; break;
    case BENCH_FLOAT64: ((double*)buffer)[i] = value; break;
    case BENCH_FLOAT8_E4M3: ((uint8_t*)buffer)[i] = tutti_float8_e4m3_from_double(value); break;
    case BENCH_FLOAT8_E5M2: ((uint8_t*)buffer)[i] = tutti_float8_e5m2_from_double(value); break;
  }
}

static double load(bench_dtype dtype, const void* buffer, size_t i) {
  switch (dtype) {
    case BENCH_INT8: return ((const int8_t*)buffer)[i];
    case BENCH_UINT8: return ((const uint8_t*)buffer)[i];
    case BENCH_INT32: return ((const int32_t*)buffer)[i];
    case BENCH_INT64: return (double)((const int64_t*)buffer)[i];
    case BENCH_FLOAT16: return tutti_float16_to_double(((const uint16_t*)buffer)[i]);
    case BENCH_BFLOAT16: return tutti_bfloat16_to_double(((const uint16_t*)buffer)[i]);
    case BENCH_FLOAT32: return ((const float*)buffer)[i];
    case BENCH_FLOAT64: return ((const double*)buffer)[i];
    case BENCH_FLOAT8_E4M3: return tutti_float8_e4m3_to_double(((const uint8_t*)buffer)[i]);
    case BENCH_FLOAT8_E5M2: return tutti_float8_e5m2_to_double(((const uint8_t*)buffer)[i]);
  }
  return NAN;
}

static int is_float(bench_dtype dtype) { return dtype >= BENCH_FLOAT16; }

/* ---------------------------------------------------------------- the data */

static int is_fp8(bench_dtype dtype) { return dtype == BENCH_FLOAT8_E4M3 || dtype == BENCH_FLOAT8_E5M2; }

/* Element i of rank r's send data: small integers (1..7, or 1..2 for prod and for fp8)
 * so that every reduction is exact in every dtype for the world sizes a node runs
 * (fp8's integers are exact up to 16 for e4m3 and 8 for e5m2: sums of up to 8 and 4
 * ranks), hashed so that a block in the wrong place or from the wrong rank shows. */
static double value_of(const bench_case* c, int r, size_t i) {
  uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(r + 1) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  return c->op == BENCH_PROD || is_fp8(c->dtype) ? 1 + h % 2 : 1 + h % 7;
}

/* Element i of the reduction over every rank, rounded to the dtype like the result. */
static double reduced_value(const bench_case* c, int n, size_t i) {
  double acc = value_of(c, 0, i);
  for (int r = 1; r < n; r++) {
    double v = value_of(c, r, i);
    switch (c->op) {
      case BENCH_SUM:
      case BENCH_AVG: acc += v; break;
      case BENCH_PROD: acc *= v; break;
      case BENCH_MIN: acc = v < acc ? v : acc; break;
      case BENCH_MAX: acc = v > acc ? v : acc; break;
    }
  }
  if (c->op == BENCH_AVG) acc /= n;
  unsigned char element[8];
  store(c->dtype, element, 0, acc);
  return load(c->dtype, element, 0);
}

static void fill(const bench_case* c, void* buffer, int r, size_t n_elements) {
  for (size_t i = 0; i < n_elements; i++) store(c->dtype, buffer, i, value_of(c, r, i));
}

/* Averages of integers may be rounded either way, and averages of floats by an ulp
 * or two of the dtype; every other result is an exact integer, except fp8 sums past
 * the ranks above, which each step of an algorithm rounds by up to half an ulp (n:
 * the ranks). */
static int differs(const bench_case* c, int n, double got, double want) {
  if (got == want) return 0;
  static const double relative[] = {0, 0, 0, 0, 2e-3, 1.6e-2, 1e-6, 1e-12, 0.0625, 0.125};
  if (is_fp8(c->dtype) && (c->op == BENCH_SUM || c->op == BENCH_AVG))
    return !(fabs(got - want) <= n * relative[c->dtype] * fabs(want));
  if (c->op != BENCH_AVG) return 1;
  if (!is_float(c->dtype)) return fabs(got - want) > 1;
  return !(fabs(got - want) <= relative[c->dtype] * fabs(want));
}

/* Puts this rank's data in place before the checked run. Broadcast runs in place on
 * both backends (MPI_Bcast has one buffer), so the root's data lives in recv. */
static void prepare(const bench_case* c, int me, int n, void* send, void* recv, size_t count) {
  switch (c->coll) {
    case BENCH_ALL_REDUCE:
    case BENCH_REDUCE:
    case BENCH_ALL_GATHER:
    case BENCH_GATHER:
    case BENCH_SENDRECV: fill(c, send, me, count); break;
    case BENCH_REDUCE_SCATTER:
    case BENCH_SCATTER:
    case BENCH_ALL_TO_ALL: fill(c, send, me, count * (size_t)n); break;
    case BENCH_BROADCAST:
      if (me == c->root) fill(c, recv, me, count);
      break;
    case BENCH_BARRIER: break;
  }
}

/* Bytes of recv that the operation writes on this rank. */
static size_t recv_extent(const bench_case* c, int me, int n, size_t count) {
  size_t element = dtype_sizes[c->dtype];
  switch (c->coll) {
    case BENCH_ALL_REDUCE:
    case BENCH_REDUCE_SCATTER:
    case BENCH_SCATTER:
    case BENCH_SENDRECV: return count * element;
    case BENCH_ALL_GATHER:
    case BENCH_ALL_TO_ALL: return count * (size_t)n * element;
    case BENCH_REDUCE: return me == c->root ? count * element : 0;
    case BENCH_GATHER: return me == c->root ? count * (size_t)n * element : 0;
    case BENCH_BROADCAST: return me == c->root ? 0 : count * element;
    case BENCH_BARRIER: return 0;
  }
  return 0;
}

/* The number of elements of recv that differ from what this rank should hold. */
static size_t count_wrong(const bench_case* c, int me, int n, const void* recv, size_t count) {
  size_t wrong = 0;
  for (size_t i = 0; i < recv_extent(c, me, n, count) / dtype_sizes[c->dtype]; i++) {
    size_t block = i / count, offset = i % count; /* block = source rank where there are blocks */
    double want = 0;
    switch (c->coll) {
      case BENCH_ALL_REDUCE:
      case BENCH_REDUCE: want = reduced_value(c, n, i); break;
      case BENCH_REDUCE_SCATTER: want = reduced_value(c, n, (size_t)me * count + i); break;
      case BENCH_BROADCAST: want = value_of(c, c->root, i); break;
      case BENCH_SCATTER: want = value_of(c, c->root, (size_t)me * count + i); break;
      case BENCH_ALL_GATHER:
      case BENCH_GATHER: want = value_of(c, (int)block, offset); break;
      case BENCH_ALL_TO_ALL: want = value_of(c, (int)block, (size_t)me * count + offset); break;
      case BENCH_SENDRECV: want = value_of(c, me ^ 1, i); break;
      case BENCH_BARRIER: break;
    }
    double got = load(c->dtype, recv, i);
    unsigned char element[8];
    store(c->dtype, element, 0, want);
    wrong += differs(c, n, got, load(c->dtype, element, 0));
  }
  return wrong;
}

/* ---------------------------------------------------------------- timing */

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Adaptive counts: about this many bytes moved per size, between 5 and 1000 timed
 * iterations, and a tenth of that (at least 2) of warmup. Both programs use this, so
 * tutti and MPI run exactly the same number of operations at every size. */
#define BYTES_PER_SIZE ((double)(512u << 20))
static long adaptive_iters(size_t bytes) {
  double iters = BYTES_PER_SIZE / (double)(bytes ? bytes : 1);
  return iters > 1000 ? 1000 : iters < 5 ? 5 : (long)iters;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int run_n(const bench_backend* b, const bench_case* c, const void* send, void* recv, size_t count, long n) {
  for (long k = 0; k < n; k++)
    if (b->collective(b->self, c, send, recv, count) != 0) return -1;
  return 0;
}

typedef struct row {
  size_t bytes, count;
  long iters;
  double seconds; /* per operation: the max over ranks of each rank's average */
  double wrong;   /* elements, summed over ranks; -1 when not checked */
} row;

/* The buffers of a sweep: on the host, and their device copies under -m device (the
 * operations then run on those; NULL otherwise). */
typedef struct buffers {
  void *send, *recv;
  void *device_send, *device_recv;
  size_t capacity;
} buffers;

static void free_host(const bench_backend* b, const options* o, const buffers* m) {
  if (o->shared) {
    b->shared_free(b->self, m->send);
    b->shared_free(b->self, m->recv);
  } else {
    free(m->send);
    free(m->recv);
  }
}

static int measure(const bench_backend* b, const options* o, const buffers* m, size_t count, row* out) {
  const bench_case* c = &o->c;
  long iters = o->iters > 0 ? o->iters : adaptive_iters(out->bytes);
  long warmup = o->warmup >= 0 ? o->warmup : (iters / 10 > 2 ? iters / 10 : 2);
  /* In place, this rank's input goes where the result will. */
  prepare(c, b->rank, b->size, c->in_place ? m->recv : m->send, m->recv, count);
  void* send = c->in_place ? m->recv : m->send;
  void* recv = m->recv;
  if (m->device_send) {
    /* Copied outside the timed runs: only the operations are timed. */
    if (b->device_copy(b->self, m->device_send, m->send, m->capacity, 1) != 0 ||
        b->device_copy(b->self, m->device_recv, m->recv, m->capacity, 1) != 0)
      return -1;
    send = c->in_place ? m->device_recv : m->device_send;
    recv = m->device_recv;
  }
  if (run_n(b, c, send, recv, count, warmup) != 0) return -1;
  double wrong[1] = {-1};
  if (o->check) {
    /* One untimed run on a poisoned recv (0xff bytes: -1 and NaN), so that a result
     * left by the warmup cannot pass for this one. */
    size_t extent = recv_extent(c, b->rank, b->size, count);
    if (c->in_place) {
      prepare(c, b->rank, b->size, m->recv, NULL, count); /* its input, which the warmup changed */
    } else {
      memset(m->recv, 0xff, extent);
    }
    if (m->device_recv && b->device_copy(b->self, m->device_recv, m->recv, extent, 1) != 0) return -1;
    if (b->collective(b->self, c, send, recv, count) != 0) return -1;
    if (m->device_recv && b->device_copy(b->self, m->recv, m->device_recv, extent, 0) != 0) return -1;
    wrong[0] = (double)count_wrong(c, b->rank, b->size, m->recv, count);
    if (b->all_reduce_f64(b->self, wrong, 1, 0) != 0) return -1;
  }
  double blocks[MAX_BLOCKS];
  for (int k = 0; k < o->blocks; k++) {
    if (b->barrier(b->self) != 0) return -1;
    double start = now_seconds();
    if (run_n(b, c, send, recv, count, iters) != 0) return -1;
    blocks[k] = (now_seconds() - start) / (double)iters;
  }
  /* Each block's time is the slowest rank's, as with one block. */
  if (b->all_reduce_f64(b->self, blocks, o->blocks, 1) != 0) return -1;
  qsort(blocks, (size_t)o->blocks, sizeof blocks[0], compare_doubles);
  out->iters = iters * o->blocks;
  out->seconds = blocks[o->blocks / 2];
  out->wrong = wrong[0];
  return 0;
}

/* ---------------------------------------------------------------- the sweep */

static void print_header(const bench_backend* b, const options* o) {
  const bench_case* c = &o->c;
  printf("# %s %s: %d ranks, %s, dtype %s, op %s, root %d, %s%s, %s memory\n", b->program, coll_names[c->coll], b->size,
         b->library, dtype_names[c->dtype], op_names[c->op], c->root,
         c->async ? "async (issue, then wait)" : "blocking", c->in_place ? ", in place" : "",
         o->device   ? "device"
         : o->shared ? "shared host"
                     : "host");
  char timing[96] = "time = max over ranks of the average";
  if (o->blocks > 1) {
    snprintf(timing, sizeof timing, "time = the median of %d blocks, each the max over ranks of its average",
             o->blocks);
  }
  printf("# sizes %zu..%zu B x%g; warmup %s, iters %s; check %s; %s\n", o->min_bytes, o->max_bytes, o->factor,
         o->warmup >= 0 ? "fixed" : "adaptive", o->iters > 0 ? "fixed" : "adaptive",
         o->check ? "on (one untimed run)" : "off", timing);
  printf("#\n# %10s %12s %9s %6s %5s %12s %12s %12s %8s %7s\n", "size", "count", "type", "redop", "root", "time",
         "algbw", "busbw", "#wrong", "iters");
  printf("# %10s %12s %9s %6s %5s %12s %12s %12s %8s %7s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
         "(GB/s)", "", "");
  fflush(stdout);
}

static void print_row(const bench_backend* b, const options* o, const row* r) {
  const bench_case* c = &o->c;
  double algbw = r->bytes / r->seconds / 1e9;
  char wrong[24];
  if (r->wrong < 0)
    snprintf(wrong, sizeof wrong, "N/A");
  else
    snprintf(wrong, sizeof wrong, "%.0f", r->wrong);
  printf("  %10zu %12zu %9s %6s %5d %12.3f %12.3f %12.3f %8s %7ld\n", r->bytes, r->count, dtype_names[c->dtype],
         bench_reduces(c->coll) ? op_names[c->op] : "none", c->root, r->seconds * 1e6, algbw,
         algbw * busbw_factor(c->coll, b->size), wrong, r->iters);
  fflush(stdout);
}

/* The count argument for a row of `bytes`, 0 if no element fits (rows skipped). */
static size_t count_for(const options* o, int n, size_t bytes) {
  size_t per = dtype_sizes[o->c.dtype] * (size_is_whole_array(o->c.coll) ? (size_t)n : 1);
  return bytes / per;
}

int bench_main(int argc, char** argv, const bench_backend* b) {
  options o;
  int status = parse_options(argc, argv, b, &o);
  if (status != 0) return status;
  const bench_case* c = &o.c;
  int n = b->size, me = b->rank;

  size_t sizes[64], n_sizes = 0;
  if (c->coll == BENCH_BARRIER) {
    sizes[n_sizes++] = 0;
  } else {
    for (double s = (double)o.min_bytes; s <= (double)o.max_bytes && n_sizes < COUNT_OF(sizes); s *= o.factor) {
      size_t count = count_for(&o, n, (size_t)s);
      if (count == 0) continue;
      if (n_sizes > 0 && count == count_for(&o, n, sizes[n_sizes - 1])) continue;
      sizes[n_sizes++] = (size_t)s;
    }
  }

  size_t capacity = 64;
  for (size_t k = 0; k < n_sizes; k++)
    if (sizes[k] > capacity) capacity = sizes[k];
  buffers m = {NULL, NULL, NULL, NULL, capacity};
  if (o.shared) {
    m.send = b->shared_alloc(b->self, capacity);
    m.recv = m.send ? b->shared_alloc(b->self, capacity) : NULL;
    if (!m.recv) return BENCH_EXIT_FAILED; /* the backend said why; ending the job frees the rest */
  } else if (posix_memalign(&m.send, 4096, capacity) != 0 || posix_memalign(&m.recv, 4096, capacity) != 0) {
    fprintf(stderr, "%s: rank %d: cannot allocate two buffers of %zu bytes\n", b->program, me, capacity);
    return BENCH_EXIT_FAILED;
  }
  memset(m.send, 0, capacity); /* fault the pages in now rather than in the first timed run */
  memset(m.recv, 0, capacity);
  if (o.device) {
    m.device_send = b->device_alloc(b->self, capacity);
    m.device_recv = m.device_send ? b->device_alloc(b->self, capacity) : NULL;
    if (!m.device_recv) {
      if (m.device_send) b->device_free(b->self, m.device_send);
      free_host(b, &o, &m);
      return BENCH_EXIT_FAILED;
    }
  }

  if (me == 0) print_header(b, &o);
  double total_busbw = 0, total_wrong = 0;
  status = BENCH_EXIT_OK;
  for (size_t k = 0; k < n_sizes; k++) {
    row r;
    r.count = count_for(&o, n, sizes[k]);
    r.bytes = r.count * dtype_sizes[c->dtype] * (size_is_whole_array(c->coll) ? (size_t)n : 1);
    if (measure(b, &o, &m, r.count, &r) != 0) {
      status = BENCH_EXIT_FAILED;
      break;
    }
    r.count *= size_is_whole_array(c->coll) ? (size_t)n : 1; /* nccl-tests prints the whole array's count */
    if (me == 0) print_row(b, &o, &r);
    total_busbw += r.bytes / r.seconds / 1e9 * busbw_factor(c->coll, n);
    if (r.wrong > 0) total_wrong += r.wrong;
  }
  if (status == BENCH_EXIT_OK) {
    if (total_wrong > 0) status = BENCH_EXIT_WRONG;
    if (me == 0) {
      printf("# wrong elements: %.0f%s\n", total_wrong,
             total_wrong > 0 ? " (FAILED)" : (o.check ? "" : " (not checked)"));
      if (n_sizes) printf("# average bus bandwidth: %.3f GB/s\n", total_busbw / (double)n_sizes);
      fflush(stdout);
    }
  }
  if (o.device) {
    b->device_free(b->self, m.device_send);
    b->device_free(b->self, m.device_recv);
  }
  free_host(b, &o, &m);
  return status;
}
