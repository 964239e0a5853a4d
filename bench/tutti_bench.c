/* tutti-bench: times tutti's collectives the way nccl-tests times NCCL's.
 *
 * Run:   tutti launch -n 2 -- build/bin/tutti-bench all_reduce -b 8 -e 64M -f 4
 * Prints on rank 0 a header, then one row per size (docs/benchmarks.md says
 * what the columns mean); the times depend on the machine:
 *   #       size        count      type  redop  root         time        algbw        busbw   #wrong   iters
 *   #        (B)   (elements)                                (us)       (GB/s)       (GB/s)
 *              8            2   float32    sum    -1         0.51        0.016        0.016        0    1000
 *   ...
 *       33554432      8388608   float32    sum    -1      4829.70        6.948        6.948        0      16
 *   # wrong elements: 0
 * and exits 1 if an element was wrong.
 * bench/mpi_bench.c is the same harness (bench/harness.c) over MPI, for
 * scripts/bench-vs-mpi.sh, and bench/nccl_bench.c over raw NCCL. This file only maps
 * the harness's calls onto tutti.h. Built with CUDA (TUTTI_BENCH_CUDA, where cmake
 * finds it), it takes -m device: buffers in CUDA device memory, as nccl-tests times.
 */
#include <stdio.h>

#include "harness.h"
#include "tutti.h"
#ifdef TUTTI_BENCH_CUDA
#include "cuda_memory.h"
#endif

static const char* const coll_functions[] = {
    "tutti_all_reduce", "tutti_broadcast", "tutti_all_gather", "tutti_reduce_scatter", "tutti_reduce",
    "tutti_gather",     "tutti_scatter",   "tutti_all_to_all", "tutti_barrier",        "tutti_send and tutti_recv"};

static int failed(const char* what, tutti_status status) {
  fprintf(stderr, "tutti-bench: %s failed: %s: %s\n", what, tutti_status_name(status), tutti_last_error());
  return -1;
}

static tutti_status issue(tutti_comm* comm, const bench_case* c, const void* send, void* recv, size_t count,
                          tutti_work** work) {
  /* bench_dtype and bench_op list their values in tutti's order. */
  tutti_dtype dtype = (tutti_dtype)c->dtype;
  tutti_op op = (tutti_op)c->op;
  switch (c->coll) {
    case BENCH_ALL_REDUCE: return tutti_all_reduce(comm, send, recv, count, dtype, op, work);
    case BENCH_BROADCAST: return tutti_broadcast(comm, recv, recv, count, dtype, c->root, work);
    case BENCH_ALL_GATHER: return tutti_all_gather(comm, send, recv, count, dtype, work);
    case BENCH_REDUCE_SCATTER: return tutti_reduce_scatter(comm, send, recv, count, dtype, op, work);
    case BENCH_REDUCE: return tutti_reduce(comm, send, recv, count, dtype, op, c->root, work);
    case BENCH_GATHER: return tutti_gather(comm, send, recv, count, dtype, c->root, work);
    case BENCH_SCATTER: return tutti_scatter(comm, send, recv, count, dtype, c->root, work);
    case BENCH_ALL_TO_ALL: return tutti_all_to_all(comm, send, recv, count, dtype, work);
    case BENCH_BARRIER: return tutti_barrier(comm, work);
    case BENCH_SENDRECV: break; /* collective() sends and receives */
  }
  return TUTTI_ERR_INVALID_ARGUMENT;
}

/* The receive posted first, with a work, so that two ranks that then both send do not
 * wait for each other; the send blocking, or with a work of its own under -a 1. */
static tutti_status send_and_receive(tutti_comm* comm, const bench_case* c, const void* send, void* recv,
                                     size_t count) {
  tutti_work *received = NULL, *sent = NULL;
  tutti_status status = tutti_recv(comm, recv, count, (tutti_dtype)c->dtype, c->peer, 0, &received);
  if (status != TUTTI_OK) return status;
  status = tutti_send(comm, send, count, (tutti_dtype)c->dtype, c->peer, 0, c->async ? &sent : NULL);
  if (status == TUTTI_OK && sent) status = tutti_work_wait(sent, -1);
  tutti_status waited = tutti_work_wait(received, -1);
  if (sent) tutti_work_release(sent);
  tutti_work_release(received);
  return status != TUTTI_OK ? status : waited;
}

static int collective(void* self, const bench_case* c, const void* send, void* recv, size_t count) {
  if (c->coll == BENCH_SENDRECV) {
    tutti_status status = send_and_receive((tutti_comm*)self, c, send, recv, count);
    return status == TUTTI_OK ? 0 : failed(coll_functions[c->coll], status);
  }
  tutti_work* work = NULL;
  tutti_status status = issue((tutti_comm*)self, c, send, recv, count, c->async ? &work : NULL);
  if (status == TUTTI_OK && work) {
    status = tutti_work_wait(work, -1);
    tutti_work_release(work);
  }
  return status == TUTTI_OK ? 0 : failed(coll_functions[c->coll], status);
}

static int barrier(void* self) {
  tutti_status status = tutti_barrier((tutti_comm*)self, NULL);
  return status == TUTTI_OK ? 0 : failed("tutti_barrier", status);
}

static int all_reduce_f64(void* self, double* values, size_t n, int max) {
  tutti_status status = tutti_all_reduce((tutti_comm*)self, values, values, n, TUTTI_DTYPE_FLOAT64,
                                         max ? TUTTI_OP_MAX : TUTTI_OP_SUM, NULL);
  return status == TUTTI_OK ? 0 : failed("tutti_all_reduce (of the timings)", status);
}

static const char* unsupported(void* self, const bench_case* c) {
  (void)self;
  (void)c;
  return NULL; /* tutti takes every dtype and op with every collective */
}

static void* shared_alloc(void* self, size_t bytes) {
  void* buffer = NULL;
  tutti_status status = tutti_mem_alloc((tutti_comm*)self, bytes, &buffer);
  if (status != TUTTI_OK) failed("tutti_mem_alloc", status);
  return buffer;
}

static void shared_free(void* self, void* buffer) {
  tutti_status status = tutti_mem_free((tutti_comm*)self, buffer);
  if (status != TUTTI_OK) failed("tutti_mem_free", status);
}

#ifdef TUTTI_BENCH_CUDA
static void* device_alloc(void* self, size_t bytes) {
  /* The communicator finds device pointers once CUDA is in use: AUTO says so (and
   * loads CUDA) for this process, whose CUDA came up after tutti_comm_init. */
  void* buffer = bench_cuda_alloc("tutti-bench", bytes);
  if (buffer == NULL) return NULL;
  tutti_status status = tutti_comm_set_memory((tutti_comm*)self, TUTTI_MEMORY_AUTO);
  if (status != TUTTI_OK) {
    failed("tutti_comm_set_memory", status);
    bench_cuda_free(self, buffer);
    return NULL;
  }
  return buffer;
}

static int device_copy(void* self, void* dst, const void* src, size_t bytes, int to_device) {
  (void)self;
  return bench_cuda_copy("tutti-bench", dst, src, bytes, to_device);
}
#endif

int main(int argc, char** argv) {
  if (bench_help(argc, argv, "tutti-bench")) return 0;
  tutti_comm* comm = NULL;
  tutti_status status = tutti_comm_init(NULL, &comm);
  if (status != TUTTI_OK) return failed("tutti_comm_init", status) ? 1 : 0;
  int32_t rank = 0, size = 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);

  char library[64];
  snprintf(library, sizeof library, "tutti %s", tutti_version_string());
#ifdef TUTTI_BENCH_CUDA
  bench_backend backend = {"tutti-bench",   library,     rank,           size,        comm,
                           collective,      barrier,     all_reduce_f64, unsupported, device_alloc,
                           bench_cuda_free, device_copy, shared_alloc,   shared_free};
#else
  bench_backend backend = {"tutti-bench",  library,     rank, size, comm, collective,   barrier,
                           all_reduce_f64, unsupported, NULL, NULL, NULL, shared_alloc, shared_free};
#endif
  int exit_status = bench_main(argc, argv, &backend);
  /* After a failed call the other ranks may still be inside a collective: leave
   * without the destroy (which waits for them); tutti launch stops the rest. */
  if (exit_status == BENCH_EXIT_FAILED) return exit_status;
  tutti_comm_destroy(comm);
  return exit_status;
}
