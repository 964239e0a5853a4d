/* coll_check: a rank that runs a matrix of collectives and checks every result against
 * values it computes itself (coll_values.h), for the multi-process tests.
 *
 *   coll_check [--collectives LIST] [--dtypes LIST] [--ops LIST] [--counts LIST]
 *              [--roots LIST] [--inplace] [--async] [--shared]
 *              [--big-dtypes LIST] [--big-ops LIST] [--big-from COUNT]
 *              [--random CASES [--seed SEED]] [--grow K]
 *
 * LISTs are comma-separated names, or "all". Every collective runs with every dtype,
 * every count, every root (rooted ones) and every op (reducing ones). --roots takes
 * numbers, "last" (size - 1) and "middle" (size / 2); roots out of range are skipped,
 * duplicates run once. --inplace adds the in-place form of each case, --async adds
 * each case issued with a work pointer and waited on (both: all four forms). Counts
 * of at least --big-from (default 4096) run only the --big-dtypes (default float32)
 * and --big-ops (default sum,avg), to keep the matrix fast. --shared takes every
 * buffer, guard zones included, from one tutti_mem_alloc region, where the shared-memory
 * transport reads and writes other ranks' buffers in place (from 64 KiB a block).
 * --random runs CASES cases drawn from the lists instead of the matrix, the same draw
 * on every rank (from SEED, default 1): any collective, dtype (16-bit and 8-bit floats
 * included), op, root and form at any count from 0 to the largest of --counts, which
 * the matrix, keeping large counts to the --big-dtypes, leaves out; a soak. --grow K
 * runs it all on a grown communicator: the launcher's last K ranks join
 * (tutti_comm_join) a world of the others, which grows by K to take them in
 * (tutti_comm_grow).
 *
 * Each case also checks that the send buffer is unchanged, that the bytes around every
 * buffer are untouched, and that a barrier returns only after every rank entered it.
 * Buffers a rank does not use are passed as NULL (recv of reduce and gather off the
 * root, send of broadcast and scatter off the root).
 *
 * Prints "FAIL rank R COLLECTIVE DTYPE OP COUNT ROOT: ..." for each failure (at most
 * 3 elements per case, then a count), stops at the first call that returns an error
 * (the ranks may then disagree on what comes next), and ends with
 * "coll_check: rank R ran N cases, F failures"; exits 1 if F > 0, 2 on bad usage.
 *
 * Built again as tests/gpu's gpu_coll_check with COLL_CHECK_CUDA, it takes --device:
 * every buffer, guard zones included, is mirrored in CUDA device memory for the call
 * and copied back for the same checks. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_values.h"
#include "tutti.h"
#ifdef COLL_CHECK_CUDA
#include <cuda_runtime_api.h>
#endif

enum coll_kind { ALL_REDUCE, REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER, GATHER, SCATTER, ALL_TO_ALL, BARRIER };
#define COLL_KINDS 9
static const char* const coll_names[COLL_KINDS] = {
    "all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "gather", "scatter", "all_to_all", "barrier"};
static const int coll_reduces[COLL_KINDS] = {1, 1, 0, 0, 1, 0, 0, 0, 0};
static const int coll_rooted[COLL_KINDS] = {0, 1, 1, 0, 0, 1, 1, 0, 0};

#define GUARD 64
#define GUARD_BYTE 0xA5
#define SENTINEL_BYTE 0xCD
#define MAX_LIST 16
#define ELEMENTS_SHOWN 3

typedef struct options {
  int colls[COLL_KINDS], n_colls;
  tutti_dtype dtypes[CV_DTYPES], big_dtypes[CV_DTYPES];
  int n_dtypes, n_big_dtypes;
  tutti_op ops[CV_OPS], big_ops[CV_OPS];
  int n_ops, n_big_ops;
  size_t counts[MAX_LIST];
  int n_counts;
  char roots[MAX_LIST][16];
  int n_roots;
  size_t big_from;
  int inplace, async, shared, device;
  long random_cases;
  uint64_t seed;
  int grow;
} options;

typedef struct test_case {
  int coll;
  tutti_dtype dtype;
  tutti_op op;
  size_t count;
  int root;
  int inplace, async;
  uint64_t id;
} test_case;

static tutti_comm* comm;
static int rank, size;
#ifdef COLL_CHECK_CUDA
static int on_device; /* --device */
#endif
static long cases_run, failures;

/* ---- options ------------------------------------------------------------------------ */

static void usage(const char* message, const char* value) {
  fprintf(stderr, "coll_check: %s \"%s\"\n", message, value);
  exit(2);
}

/* Splits a comma-separated list of names out of names[0..n) into out; "all" is all. */
static int parse_names(const char* text, const char* const* names, int n, int* out, const char* what) {
  if (strcmp(text, "all") == 0) {
    for (int i = 0; i < n; ++i) out[i] = i;
    return n;
  }
  char copy[512];
  snprintf(copy, sizeof copy, "%s", text);
  int used = 0;
  char* save = NULL;
  for (char* item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    int index = cv_lookup(names, n, item);
    if (index < 0) usage(what, item);
    if (used < n) out[used++] = index;
  }
  return used;
}

static int parse_dtypes(const char* text, tutti_dtype* out) {
  int indices[CV_DTYPES];
  int n = parse_names(text, cv_dtype_names, CV_DTYPES, indices, "unknown dtype");
  for (int i = 0; i < n; ++i) out[i] = (tutti_dtype)indices[i];
  return n;
}

static int parse_ops(const char* text, tutti_op* out) {
  int indices[CV_OPS];
  int n = parse_names(text, cv_op_names, CV_OPS, indices, "unknown op");
  for (int i = 0; i < n; ++i) out[i] = (tutti_op)indices[i];
  return n;
}

static void parse_options(int argc, char** argv, options* o) {
  memset(o, 0, sizeof *o);
  o->n_colls = parse_names("all", coll_names, COLL_KINDS, o->colls, "");
  o->n_dtypes = parse_dtypes("all", o->dtypes);
  o->n_ops = parse_ops("all", o->ops);
  o->n_big_dtypes = parse_dtypes("float32", o->big_dtypes);
  o->n_big_ops = parse_ops("sum,avg", o->big_ops);
  const size_t default_counts[] = {0, 1, 7, 70001};
  o->n_counts = 4;
  memcpy(o->counts, default_counts, sizeof default_counts);
  const char* default_roots[] = {"0", "last", "middle"};
  o->n_roots = 3;
  for (int i = 0; i < 3; ++i) snprintf(o->roots[i], sizeof o->roots[i], "%s", default_roots[i]);
  o->big_from = 4096;
  o->seed = 1;

  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--inplace") == 0) {
      o->inplace = 1;
      continue;
    }
    if (strcmp(arg, "--async") == 0) {
      o->async = 1;
      continue;
    }
    if (strcmp(arg, "--shared") == 0) {
      o->shared = 1;
      continue;
    }
#ifdef COLL_CHECK_CUDA
    if (strcmp(arg, "--device") == 0) {
      o->device = 1;
      continue;
    }
#endif
    if (i + 1 >= argc) usage("missing the value of", arg);
    const char* value = argv[++i];
    if (strcmp(arg, "--collectives") == 0) {
      o->n_colls = parse_names(value, coll_names, COLL_KINDS, o->colls, "unknown collective");
    } else if (strcmp(arg, "--dtypes") == 0) {
      o->n_dtypes = parse_dtypes(value, o->dtypes);
    } else if (strcmp(arg, "--ops") == 0) {
      o->n_ops = parse_ops(value, o->ops);
    } else if (strcmp(arg, "--big-dtypes") == 0) {
      o->n_big_dtypes = parse_dtypes(value, o->big_dtypes);
    } else if (strcmp(arg, "--big-ops") == 0) {
      o->n_big_ops = parse_ops(value, o->big_ops);
    } else if (strcmp(arg, "--big-from") == 0) {
      o->big_from = (size_t)strtoull(value, NULL, 10);
    } else if (strcmp(arg, "--random") == 0) {
      o->random_cases = strtol(value, NULL, 10);
      if (o->random_cases <= 0) usage("bad number of random cases", value);
    } else if (strcmp(arg, "--grow") == 0) {
      o->grow = (int)strtol(value, NULL, 10);
      if (o->grow <= 0) usage("bad number of ranks to grow by", value);
    } else if (strcmp(arg, "--seed") == 0) {
      o->seed = (uint64_t)strtoull(value, NULL, 10);
    } else if (strcmp(arg, "--counts") == 0 || strcmp(arg, "--roots") == 0) {
      int is_counts = arg[2] == 'c';
      char copy[512];
      snprintf(copy, sizeof copy, "%s", value);
      int used = 0;
      char* save = NULL;
      for (char* item = strtok_r(copy, ",", &save); item && used < MAX_LIST; item = strtok_r(NULL, ",", &save)) {
        if (is_counts) {
          char* end = NULL;
          o->counts[used++] = (size_t)strtoull(item, &end, 10);
          if (*end != '\0') usage("bad count", item);
        } else {
          snprintf(o->roots[used++], sizeof o->roots[0], "%s", item);
        }
      }
      if (is_counts) {
        o->n_counts = used;
      } else {
        o->n_roots = used;
      }
    } else {
      usage("unknown option", arg);
    }
  }
}

/* The distinct roots in range for this world size, in the order given. */
static int resolve_roots(const options* o, int* out) {
  int n = 0;
  for (int i = 0; i < o->n_roots; ++i) {
    int root;
    if (strcmp(o->roots[i], "last") == 0) {
      root = size - 1;
    } else if (strcmp(o->roots[i], "middle") == 0) {
      root = size / 2;
    } else {
      root = atoi(o->roots[i]);
    }
    if (root < 0 || root >= size) continue;
    int seen = 0;
    for (int j = 0; j < n; ++j) seen |= out[j] == root;
    if (!seen) out[n++] = root;
  }
  return n;
}

/* ---- buffers ------------------------------------------------------------------------ */

typedef struct buffer {
  unsigned char* base;
  unsigned char* data; /* NULL when the rank passes no buffer */
  size_t bytes;
} buffer;

/* --shared: a case's two buffers, each with its guards, are the two halves of one
 * region from tutti_mem_alloc. */
static unsigned char* shared_region;
static size_t shared_half;
static int shared_halves_used;

static void buffer_make(buffer* b, size_t bytes) {
  b->bytes = bytes;
  if (shared_region != NULL) {
    if (shared_halves_used == 2 || bytes + 2 * GUARD > shared_half) {
      fprintf(stderr, "coll_check: a case needs more than the shared region's two halves of %zu bytes\n", shared_half);
      exit(1);
    }
    b->base = shared_region + shared_half * (size_t)shared_halves_used++;
  } else {
    b->base = malloc(bytes + 2 * GUARD);
  }
  if (b->base == NULL) {
    fprintf(stderr, "coll_check: out of memory\n");
    exit(1);
  }
  memset(b->base, GUARD_BYTE, GUARD);
  memset(b->base + GUARD + bytes, GUARD_BYTE, GUARD);
  b->data = b->base + GUARD;
  memset(b->data, SENTINEL_BYTE, bytes);
}

static void buffer_free(buffer* b) {
  if (shared_region != NULL) {
    shared_halves_used = 0; /* a case frees both of its buffers at its end */
  } else {
    free(b->base);
  }
  b->base = b->data = NULL;
}

/* The region for --shared: two halves, each the largest buffer of any case with guards. */
static int make_shared_region(const options* o) {
  size_t largest = 0;
  for (int i = 0; i < o->n_counts; ++i) largest = o->counts[i] > largest ? o->counts[i] : largest;
  shared_half = (largest * (size_t)size * sizeof(double) + 2 * GUARD + 63) / 64 * 64;
  tutti_status status = tutti_mem_alloc(comm, 2 * shared_half, (void**)&shared_region);
  if (status == TUTTI_OK) return 1;
  printf("FAIL rank %d tutti_mem_alloc of %zu bytes: %s: %s\n", rank, 2 * shared_half, tutti_status_name(status),
         tutti_last_error());
  return 0;
}

/* Offset of the first guard byte that changed (negative: before the data), or 0. */
static long buffer_guard_damage(const buffer* b) {
  if (b->base == NULL) return 0;
  for (long i = 0; i < GUARD; ++i) {
    if (b->base[i] != GUARD_BYTE) return i - GUARD;
  }
  for (long i = 0; i < GUARD; ++i) {
    if (b->base[GUARD + b->bytes + (size_t)i] != GUARD_BYTE) return (long)b->bytes + i + 1;
  }
  return 0;
}

/* ---- one case ----------------------------------------------------------------------- */

static void case_label(const test_case* c, char* out, size_t out_size) {
  char root[16] = "-";
  if (coll_rooted[c->coll]) snprintf(root, sizeof root, "%d", c->root);
  snprintf(out, out_size, "%s%s%s %s %s %zu %s", coll_names[c->coll], c->inplace ? "+inplace" : "",
           c->async ? "+async" : "", c->coll == BARRIER ? "-" : cv_dtype_name(c->dtype),
           coll_reduces[c->coll] ? cv_op_name(c->op) : "-", c->count, root);
}

static void fail_line(const test_case* c, const char* what) {
  char label[160];
  case_label(c, label, sizeof label);
  printf("FAIL rank %d %s: %s\n", rank, label, what);
}

/* Issues the collective, blocking or with a work pointer, and returns its status. */
static tutti_status issue(const test_case* c, const void* send, void* recv) {
  tutti_work* work = NULL;
  tutti_work** out = c->async ? &work : NULL;
  tutti_status status = TUTTI_ERR_INTERNAL;
  switch (c->coll) {
    case ALL_REDUCE: status = tutti_all_reduce(comm, send, recv, c->count, c->dtype, c->op, out); break;
    case REDUCE: status = tutti_reduce(comm, send, recv, c->count, c->dtype, c->op, c->root, out); break;
    case BROADCAST: status = tutti_broadcast(comm, send, recv, c->count, c->dtype, c->root, out); break;
    case ALL_GATHER: status = tutti_all_gather(comm, send, recv, c->count, c->dtype, out); break;
    case REDUCE_SCATTER: status = tutti_reduce_scatter(comm, send, recv, c->count, c->dtype, c->op, out); break;
    case GATHER: status = tutti_gather(comm, send, recv, c->count, c->dtype, c->root, out); break;
    case SCATTER: status = tutti_scatter(comm, send, recv, c->count, c->dtype, c->root, out); break;
    case ALL_TO_ALL: status = tutti_all_to_all(comm, send, recv, c->count, c->dtype, out); break;
    case BARRIER: status = tutti_barrier(comm, out); break;
  }
  if (!c->async || status != TUTTI_OK) return status;
  if (work == NULL) {
    printf("FAIL rank %d: the call returned TUTTI_OK but left *work NULL\n", rank);
    return TUTTI_ERR_INTERNAL;
  }
  status = tutti_work_wait(work, -1);
  int done = -1;
  tutti_status tested = tutti_work_test(work, &done);
  if (status == TUTTI_OK && (tested != TUTTI_OK || done != 1)) {
    char what[160];
    snprintf(what, sizeof what, "tutti_work_test after a successful wait returned %s with done=%d",
             tutti_status_name(tested), done);
    fail_line(c, what);
    ++failures;
  }
  tutti_status released = tutti_work_release(work);
  if (status == TUTTI_OK && released != TUTTI_OK) status = released;
  return status;
}

#ifdef COLL_CHECK_CUDA
/* A copy of b, guards included, in device memory; NULL for a buffer not made. */
static void* mirror_to_device(const buffer* b) {
  if (b->base == NULL) return NULL;
  void* device = NULL;
  if (cudaMalloc(&device, b->bytes + 2 * GUARD) != cudaSuccess ||
      cudaMemcpy(device, b->base, b->bytes + 2 * GUARD, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "coll_check: cannot mirror a buffer in device memory: %s\n",
            cudaGetErrorString(cudaGetLastError()));
    exit(1);
  }
  return device;
}

/* Where host pointer p of buffer b is in its device mirror. */
static void* on_mirror(const buffer* b, void* device, const void* p) {
  if (p == NULL || device == NULL) return (void*)p;
  return (unsigned char*)device + ((const unsigned char*)p - b->base);
}

/* issue() on device mirrors of send and recv, whose contents come back to the host
 * buffers afterwards, guards included. */
static tutti_status issue_on_device(const test_case* c, buffer* send, buffer* recv, const void* send_ptr,
                                    void* recv_ptr) {
  void* mirrors[2] = {mirror_to_device(send), mirror_to_device(recv)};
  buffer* buffers[2] = {send, recv};
  /* In place, both pointers are in recv. */
  const buffer* send_home = send->base != NULL ? send : recv;
  void* send_mirror = send->base != NULL ? mirrors[0] : mirrors[1];
  tutti_status status = issue(c, on_mirror(send_home, send_mirror, send_ptr), on_mirror(recv, mirrors[1], recv_ptr));
  for (int i = 0; i < 2; ++i) {
    if (mirrors[i] == NULL) continue;
    if (cudaMemcpy(buffers[i]->base, mirrors[i], buffers[i]->bytes + 2 * GUARD, cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
      fprintf(stderr, "coll_check: cannot copy a device buffer back: %s\n", cudaGetErrorString(cudaGetLastError()));
      exit(1);
    }
    cudaFree(mirrors[i]);
  }
  return status;
}
#endif

/* What element j of this rank's receive buffer must hold, for case c of `dtype` and
 * `op` (c's own, passed apart so that callers can make them constants). */
static inline cv_value expected_at(const test_case* c, tutti_dtype dtype, tutti_op op, size_t j, double* tolerance) {
  *tolerance = 0.0;
  size_t count = c->count;
  switch (c->coll) {
    case ALL_REDUCE:
    case REDUCE:
    case REDUCE_SCATTER: {
      size_t index = c->coll == REDUCE_SCATTER ? (size_t)rank * count + j : j;
      cv_accumulator acc;
      cv_acc_init(&acc, dtype, op);
      for (int r = 0; r < size; ++r) cv_acc_add(&acc, cv_input(dtype, op, c->id, r, index));
      return cv_acc_result(&acc, tolerance);
    }
    case BROADCAST: return cv_input(dtype, op, c->id, c->root, j);
    case ALL_GATHER:
    case GATHER: return cv_input(dtype, op, c->id, (int)(j / count), j % count);
    case SCATTER: return cv_input(dtype, op, c->id, c->root, (size_t)rank * count + j);
    case ALL_TO_ALL: return cv_input(dtype, op, c->id, (int)(j / count), (size_t)rank * count + j % count);
  }
  return cv_input(dtype, op, c->id, rank, j);
}

/* check_region's loop, for dtype and op given as constants by its dispatch. */
static inline int check_elements(const test_case* c, tutti_dtype dtype, tutti_op op, const unsigned char* data,
                                 size_t n, int is_recv) {
  int bad = 0;
  for (size_t j = 0; j < n; ++j) {
    double tolerance = 0.0;
    cv_value expected = is_recv ? expected_at(c, dtype, op, j, &tolerance) : cv_input(dtype, op, c->id, rank, j);
    int ok = is_recv && coll_reduces[c->coll] ? cv_close(dtype, cv_load(dtype, data, j), expected, tolerance)
                                              : cv_same_bytes(dtype, data, j, expected);
    if (ok) continue;
    if (bad++ < ELEMENTS_SHOWN) {
      char what[256], want[48], have[48];
      cv_format(dtype, expected, want, sizeof want);
      cv_format(dtype, cv_load(dtype, data, j), have, sizeof have);
      snprintf(what, sizeof what, "%sindex %zu expected %s got %s", is_recv ? "" : "send buffer changed: ", j, want,
               have);
      fail_line(c, what);
    }
  }
  if (bad > ELEMENTS_SHOWN) {
    char what[96];
    snprintf(what, sizeof what, "... and %d more elements of %zu", bad - ELEMENTS_SHOWN, n);
    fail_line(c, what);
  }
  return bad;
}

/* Checks n elements of data: the receive buffer against expected_at, or the send
 * buffer against this rank's inputs. Prints the first few that differ; returns how
 * many did. The checks of the big counts are most of this program's time: the loop
 * runs with c's dtype and op as constants, flattened, so that the per-element switches
 * of coll_values.h fold away. */
static __attribute__((flatten)) int check_region(const test_case* c, const unsigned char* data, size_t n, int is_recv) {
#define CHECK_AS(d, o) \
  if (c->dtype == (d) && c->op == (o)) return check_elements(c, d, o, data, n, is_recv);
  CV_EACH_DTYPE_AND_OP(CHECK_AS)
#undef CHECK_AS
  return check_elements(c, c->dtype, c->op, data, n, is_recv);
}

static inline void fill_elements(const test_case* c, tutti_dtype dtype, tutti_op op, unsigned char* data, size_t n) {
  for (size_t j = 0; j < n; ++j) cv_store(dtype, data, j, cv_input(dtype, op, c->id, rank, j));
}

/* Writes this rank's first n inputs of case c, with its dtype and op as constants as in
 * check_region. */
static __attribute__((flatten)) void fill_inputs(const test_case* c, unsigned char* data, size_t n) {
#define FILL_AS(d, o) \
  if (c->dtype == (d) && c->op == (o)) return fill_elements(c, d, o, data, n);
  CV_EACH_DTYPE_AND_OP(FILL_AS)
#undef FILL_AS
  fill_elements(c, c->dtype, c->op, data, n);
}

/* Runs one case: 0 when it passed, 1 when a check failed, -1 when the call failed. */
static int run_case(const test_case* c) {
  size_t e = cv_size(c->dtype), count = c->count, all = (size_t)size * count;
  int root_here = rank == c->root;
  size_t send_n = 0, recv_n = 0;
  int send_used = 1, recv_used = 1;
  switch (c->coll) {
    case ALL_REDUCE:
    case REDUCE:
    case BROADCAST: send_n = recv_n = count; break;
    case ALL_GATHER:
    case GATHER: send_n = count, recv_n = all; break;
    case REDUCE_SCATTER:
    case SCATTER: send_n = all, recv_n = count; break;
    case ALL_TO_ALL: send_n = recv_n = all; break;
  }
  if ((c->coll == REDUCE || c->coll == GATHER) && !root_here) recv_used = 0;
  if ((c->coll == BROADCAST || c->coll == SCATTER) && !root_here) send_used = 0;
  int inplace = c->inplace && send_used && recv_used;

  buffer send = {0}, recv = {0};
  const unsigned char* send_ptr = NULL;
  unsigned char* recv_ptr = NULL;
  /* Where the result lands and how many elements; and which send elements must stay. */
  const unsigned char* check_send = NULL;
  if (inplace) {
    switch (c->coll) {
      case ALL_GATHER:
      case GATHER: /* send is this rank's block of recv */
        buffer_make(&recv, recv_n * e);
        for (size_t j = 0; j < count; ++j) {
          cv_store(c->dtype, recv.data, (size_t)rank * count + j, cv_input(c->dtype, c->op, c->id, rank, j));
        }
        recv_ptr = recv.data;
        send_ptr = recv.data + (size_t)rank * count * e;
        break;
      case REDUCE_SCATTER:
      case SCATTER: /* recv is this rank's block of send */
        buffer_make(&recv, send_n * e);
        fill_inputs(c, recv.data, send_n);
        send_ptr = recv.data;
        recv_ptr = recv.data + (size_t)rank * count * e;
        if (c->coll == SCATTER) check_send = send_ptr; /* the root's send is never written */
        break;
      default: /* send == recv */
        buffer_make(&recv, send_n * e);
        fill_inputs(c, recv.data, send_n);
        send_ptr = recv_ptr = recv.data;
        break;
    }
  } else {
    if (send_used && c->coll != BARRIER) {
      buffer_make(&send, send_n * e);
      fill_inputs(c, send.data, send_n);
      send_ptr = check_send = send.data;
    }
    if (recv_used && c->coll != BARRIER) {
      buffer_make(&recv, recv_n * e);
      recv_ptr = recv.data;
    }
  }

#ifdef COLL_CHECK_CUDA
  tutti_status status = on_device ? issue_on_device(c, &send, &recv, send_ptr, recv_ptr) : issue(c, send_ptr, recv_ptr);
#else
  tutti_status status = issue(c, send_ptr, recv_ptr);
#endif
  int result = 0;
  if (status != TUTTI_OK) {
    char what[1024];
    snprintf(what, sizeof what, "returned %s: %s", tutti_status_name(status), tutti_last_error());
    fail_line(c, what);
    result = -1;
  } else {
    int bad = 0;
    if (recv_used && c->coll != BARRIER) bad += check_region(c, recv_ptr, recv_n, 1);
    if (check_send) bad += check_region(c, check_send, send_n, 0);
    buffer* buffers[2] = {&send, &recv};
    for (int i = 0; i < 2; ++i) {
      long damage = buffer_guard_damage(buffers[i]);
      if (damage == 0) continue;
      char what[160];
      snprintf(what, sizeof what, "the guard zone %s the %s buffer was written (at byte %ld)",
               damage < 0 ? "before" : "after", i == 0 ? "send" : "recv", damage < 0 ? damage : damage - 1);
      fail_line(c, what);
      ++bad;
    }
    result = bad > 0;
  }
  buffer_free(&send);
  buffer_free(&recv);
  return result;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* A barrier must not let any rank out before the last one entered: the last rank
 * enters 30 ms late, and every rank compares its exit time (CLOCK_MONOTONIC is one
 * clock for every process on the machine) with every rank's entry time. */
static int run_barrier_case(const test_case* c) {
  if (rank == size - 1 && size > 1) {
    struct timespec late = {0, 30 * 1000 * 1000};
    nanosleep(&late, NULL);
  }
  int64_t entered = now_ns();
  tutti_status status = issue(c, NULL, NULL);
  int64_t left = now_ns();
  if (status != TUTTI_OK) {
    char what[1024];
    snprintf(what, sizeof what, "returned %s: %s", tutti_status_name(status), tutti_last_error());
    fail_line(c, what);
    return -1;
  }
  int64_t* entries = malloc(sizeof(int64_t) * (size_t)size);
  status = tutti_all_gather(comm, &entered, entries, 1, TUTTI_DTYPE_INT64, NULL);
  int result = 0;
  if (status != TUTTI_OK) {
    char what[1024];
    snprintf(what, sizeof what, "the all_gather of entry times returned %s: %s", tutti_status_name(status),
             tutti_last_error());
    fail_line(c, what);
    result = -1;
  } else {
    for (int r = 0; r < size; ++r) {
      if (entries[r] <= left) continue;
      char what[160];
      snprintf(what, sizeof what, "left the barrier %.3f ms before rank %d entered it", (entries[r] - left) / 1e6, r);
      fail_line(c, what);
      result = 1;
    }
  }
  free(entries);
  return result;
}

/* ---- the matrix --------------------------------------------------------------------- */

/* --random: o->random_cases cases drawn by a hash of (seed, case number), so that every
 * rank draws the same ones. Returns 1 if it stopped at a failed call. */
static int run_random(const options* o, const int* roots, int n_roots) {
  size_t largest = 0;
  for (int i = 0; i < o->n_counts; ++i) largest = o->counts[i] > largest ? o->counts[i] : largest;
  for (long k = 0; k < o->random_cases; ++k) {
    uint64_t draw = cv_hash(o->seed, (uint64_t)k, 0x50a6);
    test_case c;
    c.coll = o->colls[draw % (uint64_t)o->n_colls];
    c.dtype = o->dtypes[(draw >> 8) % (uint64_t)o->n_dtypes];
    c.op = coll_reduces[c.coll] ? o->ops[(draw >> 16) % (uint64_t)o->n_ops] : TUTTI_OP_SUM;
    /* Half the cases small (the latency paths), half anywhere up to the largest. */
    uint64_t wide = cv_hash(o->seed, (uint64_t)k, 0xc0de);
    c.count = (draw >> 24) & 1 ? wide % 64 : wide % (largest + 1);
    c.root = coll_rooted[c.coll] ? roots[(draw >> 32) % (uint64_t)n_roots] : 0;
    c.inplace = o->inplace && ((draw >> 40) & 1);
    c.async = o->async && ((draw >> 41) & 1);
    c.id = (uint64_t)k;
    int result = c.coll == BARRIER ? run_barrier_case(&c) : run_case(&c);
    ++cases_run;
    if (result != 0) ++failures;
    if (result < 0) return 1;
  }
  return 0;
}

/* --grow K: the launcher's ranks from size - K on join; the others meet as a world of
 * size - K and grow by K. *comm is the grown communicator; 0 (after a FAIL line) on
 * failure. */
static int join_grown_world(int grow) {
  const char* launched_rank = getenv("TUTTI_RANK");
  const char* launched_size = getenv("TUTTI_WORLD_SIZE");
  if (launched_rank == NULL || launched_size == NULL || atoi(launched_size) <= grow) {
    printf("FAIL rank ? --grow %d needs tutti launch with more than %d ranks\n", grow, grow);
    return 0;
  }
  int first_joiner = atoi(launched_size) - grow;
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  tutti_status status = TUTTI_OK;
  const char* step = "join";
  if (atoi(launched_rank) >= first_joiner) {
    status = tutti_comm_join(&config, &comm);
  } else {
    config.rank = atoi(launched_rank);
    config.world_size = first_joiner;
    tutti_comm* before = NULL;
    step = "init";
    status = tutti_comm_init(&config, &before);
    if (status == TUTTI_OK) {
      step = "grow";
      status = tutti_comm_grow(before, grow, &comm);
      tutti_comm_destroy(before);
    }
  }
  if (status != TUTTI_OK) {
    printf("FAIL rank ? %s: %s: %s\n", step, tutti_status_name(status), tutti_last_error());
    return 0;
  }
  int32_t r32, s32;
  tutti_comm_rank(comm, &r32);
  tutti_comm_size(comm, &s32);
  rank = r32;
  size = s32;
  return 1;
}

int main(int argc, char** argv) {
  options o;
  parse_options(argc, argv, &o);
  setvbuf(stdout, NULL, _IOLBF, 0);

#ifdef COLL_CHECK_CUDA
  /* CUDA is initialised before the communicator, so that it finds device pointers. */
  on_device = o.device;
  if (on_device && cudaFree(NULL) != cudaSuccess) {
    printf("FAIL rank ? CUDA: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
#endif
  if (o.grow > 0 ? !join_grown_world(o.grow) : !cv_join_world(&comm, &rank, &size)) return 1;
  if (o.shared && !make_shared_region(&o)) return 1;
  int roots[MAX_LIST];
  int n_roots = resolve_roots(&o, roots);
  long long started = now_ns();

  int forms = (o.inplace ? 2 : 1) * (o.async ? 2 : 1);
  uint64_t id = 0;
  int stopped = o.random_cases > 0 ? run_random(&o, roots, n_roots) : 0;
  for (int ci = 0; ci < o.n_colls && !stopped && o.random_cases == 0; ++ci) {
    int coll = o.colls[ci];
    if (coll == BARRIER) {
      for (int async = 0; async <= o.async && !stopped; ++async) {
        test_case c = {BARRIER, TUTTI_DTYPE_INT8, TUTTI_OP_SUM, 0, 0, 0, async, id++};
        int result = run_barrier_case(&c);
        ++cases_run;
        if (result != 0) ++failures;
        stopped = result < 0;
      }
      continue;
    }
    for (int ki = 0; ki < o.n_counts && !stopped; ++ki) {
      size_t count = o.counts[ki];
      int big = count >= o.big_from;
      const tutti_dtype* dtypes = big ? o.big_dtypes : o.dtypes;
      const tutti_op* ops = big ? o.big_ops : o.ops;
      int n_dtypes = big ? o.n_big_dtypes : o.n_dtypes;
      int n_ops = coll_reduces[coll] ? (big ? o.n_big_ops : o.n_ops) : 1;
      int n_case_roots = coll_rooted[coll] ? n_roots : 1;
      for (int di = 0; di < n_dtypes && !stopped; ++di) {
        for (int oi = 0; oi < n_ops && !stopped; ++oi) {
          for (int ri = 0; ri < n_case_roots && !stopped; ++ri) {
            for (int form = 0; form < forms && !stopped; ++form) {
              test_case c;
              c.coll = coll;
              c.dtype = dtypes[di];
              c.op = coll_reduces[coll] ? ops[oi] : TUTTI_OP_SUM;
              c.count = count;
              c.root = coll_rooted[coll] ? roots[ri] : 0;
              c.inplace = o.inplace && (form & 1);
              c.async = o.async && (o.inplace ? form >> 1 : form);
              c.id = id++;
              int result = run_case(&c);
              ++cases_run;
              if (result != 0) ++failures;
              stopped = result < 0;
            }
          }
        }
      }
    }
  }
  if (stopped) printf("coll_check: rank %d stopped at the first failed call\n", rank);
  printf("coll_check: rank %d took %.0f ms\n", rank, (now_ns() - started) / 1e6);
  printf("coll_check: rank %d ran %ld cases, %ld failures\n", rank, cases_run, failures);
  tutti_status status = shared_region != NULL ? tutti_mem_free(comm, shared_region) : TUTTI_OK;
  if (status != TUTTI_OK) {
    printf("FAIL rank %d tutti_mem_free: %s: %s\n", rank, tutti_status_name(status), tutti_last_error());
    ++failures;
  }
  status = tutti_comm_destroy(comm);
  if (status != TUTTI_OK) {
    printf("FAIL rank %d destroy: %s: %s\n", rank, tutti_status_name(status), tutti_last_error());
    ++failures;
  }
  return failures > 0 ? 1 : 0;
}
