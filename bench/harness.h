/* harness.h: the benchmark loop shared by tutti-bench and mpi-bench.
 *
 * Both programs are this one harness over a different backend, so they parse the
 * same options, fill and check the same buffers, run the same number of iterations
 * and time them the same way: only the calls that move data differ. The harness
 * knows neither tutti.h nor mpi.h; each backend maps its enums and reports errors.
 */
#ifndef TUTTI_BENCH_HARNESS_H
#define TUTTI_BENCH_HARNESS_H

#include <stddef.h>

typedef enum bench_coll {
  BENCH_ALL_REDUCE,
  BENCH_BROADCAST,
  BENCH_ALL_GATHER,
  BENCH_REDUCE_SCATTER,
  BENCH_REDUCE,
  BENCH_GATHER,
  BENCH_SCATTER,
  BENCH_ALL_TO_ALL,
  BENCH_BARRIER,
  /* Not a collective: each rank exchanges count elements with its partner, rank ^ 1
   * (an even number of ranks), a send and a receive at once (MPI_Sendrecv). The floor
   * of a 2-rank all_reduce of a few bytes, in each library's own point-to-point. */
  BENCH_SENDRECV
} bench_coll;

/* The collectives that reduce (all_reduce, reduce, reduce_scatter), whose dtype must be
 * one the library can add; the others only move bytes. */
int bench_reduces(bench_coll coll);

/* Same order as tutti_dtype, so that tutti's backend maps them by value. */
typedef enum bench_dtype {
  BENCH_INT8,
  BENCH_UINT8,
  BENCH_INT32,
  BENCH_INT64,
  BENCH_FLOAT16,
  BENCH_BFLOAT16,
  BENCH_FLOAT32,
  BENCH_FLOAT64,
  BENCH_FLOAT8_E4M3,
  BENCH_FLOAT8_E5M2
} bench_dtype;

/* Same order as tutti_op. */
typedef enum bench_op { BENCH_SUM, BENCH_PROD, BENCH_MIN, BENCH_MAX, BENCH_AVG } bench_op;

/* What one call moves. count is the argument of the call: per rank for all_gather,
 * reduce_scatter, gather, scatter and all_to_all, as in tutti.h and MPI. */
typedef struct bench_case {
  bench_coll coll;
  bench_dtype dtype;
  bench_op op;
  int root;  /* -1 for the collectives without one */
  int peer;  /* sendrecv: this rank's partner, rank ^ 1; else -1 */
  int async; /* issue with a work/request, then wait for it */
  /* all_reduce only: send == recv, as torch's all_reduce and DDP's buckets run, so that
   * every call reads what the one before wrote (MPI_IN_PLACE for MPI) */
  int in_place;
} bench_case;

typedef struct bench_backend {
  const char* program; /* "tutti-bench" */
  const char* library; /* "tutti 0.1.0", "Open MPI v4.1.4, ..." */
  int rank, size;
  void* self;
  /* Runs one operation to completion. For BENCH_BROADCAST send == recv (in place,
   * the data is in recv on the root). Returns 0, or prints why and returns nonzero. */
  int (*collective)(void* self, const bench_case* c, const void* send, void* recv, size_t count);
  int (*barrier)(void* self);
  /* values = the element-wise max (max != 0) or sum of values over the ranks. */
  int (*all_reduce_f64)(void* self, double* values, size_t n, int max);
  /* NULL if the backend can run c, else why not (e.g. MPI has no float16). */
  const char* (*unsupported)(void* self, const bench_case* c);
  /* Device memory for -m device; NULL where the backend has none (the harness then
   * refuses -m device). copy copies host to device when to_device, else back. Each
   * returns NULL or nonzero after printing why. */
  void* (*device_alloc)(void* self, size_t bytes);
  void (*device_free)(void* self, void* buffer);
  int (*device_copy)(void* self, void* dst, const void* src, size_t bytes, int to_device);
  /* Host memory from the library's own allocator for -m shared (tutti_mem_alloc,
   * MPI_Alloc_mem); collective, like the calls. NULL where the backend has none. */
  void* (*shared_alloc)(void* self, size_t bytes);
  void (*shared_free)(void* self, void* buffer);
} bench_backend;

/* What bench_main returns. The first three are the same on every rank; after
 * BENCH_EXIT_FAILED the other ranks may be blocked in a collective, so the caller
 * should end the job (MPI_Abort; under tutti launch, exiting is enough). */
enum {
  BENCH_EXIT_OK = 0,
  BENCH_EXIT_WRONG = 1, /* a result differed from the locally computed one */
  BENCH_EXIT_USAGE = 2, /* bad arguments, or a case the backend cannot run */
  BENCH_EXIT_FAILED = 3 /* a call failed on this rank (its message is printed) */
};

/* If argv asks for help, prints the usage and returns 1 (before any rendezvous, so
 * that --help works without a launcher), else returns 0. */
int bench_help(int argc, char** argv, const char* program);

/* Parses argv (the same on every rank), runs the sweep and prints the table on rank
 * 0. Collective: every rank calls it with the same arguments. */
int bench_main(int argc, char** argv, const bench_backend* backend);

#endif /* TUTTI_BENCH_HARNESS_H */
