/* mpi-bench: the harness of tutti-bench (bench/harness.c) over MPI, so that both
 * run the same buffers, iteration counts and timing, and only the library differs.
 *
 * Not built by CMake (the project must not need MPI): scripts/bench-vs-mpi.sh runs
 *   mpicc -O2 -std=c99 bench/mpi_bench.c bench/harness.c -lm -o build/bin/mpi-bench
 * Run:   mpirun -np 2 build/bin/mpi-bench all_reduce -b 8 -e 64M -f 4
 * Same options and table as tutti-bench. MPI has no float16, bfloat16 or average:
 * those are refused. Nor has it fp8: float8_e4m3 and float8_e5m2 are moved as
 * MPI_UINT8_T by the collectives that only move data (the same bytes, so the same
 * measurement), and refused by those that reduce, saying so.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static MPI_Datatype datatype_of(bench_dtype dtype) {
  switch (dtype) {
    case BENCH_INT8: return MPI_INT8_T;
    case BENCH_UINT8: return MPI_UINT8_T;
    case BENCH_INT32: return MPI_INT32_T;
    case BENCH_INT64: return MPI_INT64_T;
    case BENCH_FLOAT32: return MPI_FLOAT;
    case BENCH_FLOAT64: return MPI_DOUBLE;
    case BENCH_FLOAT8_E4M3:
    case BENCH_FLOAT8_E5M2: return MPI_UINT8_T; /* only moved: unsupported() refuses reductions */
    case BENCH_FLOAT16:
    case BENCH_BFLOAT16: break;
  }
  return MPI_DATATYPE_NULL;
}

static MPI_Op op_of(bench_op op) {
  switch (op) {
    case BENCH_SUM: return MPI_SUM;
    case BENCH_PROD: return MPI_PROD;
    case BENCH_MIN: return MPI_MIN;
    case BENCH_MAX: return MPI_MAX;
    case BENCH_AVG: break;
  }
  return MPI_OP_NULL;
}

static const char* unsupported(void* self, const bench_case* c) {
  (void)self;
  if (datatype_of(c->dtype) == MPI_DATATYPE_NULL) return "MPI has no 16-bit floating-point type";
  if ((c->dtype == BENCH_FLOAT8_E4M3 || c->dtype == BENCH_FLOAT8_E5M2) && bench_reduces(c->coll))
    return "MPI has no 8-bit floating-point type to reduce (fp8 is only moved, as bytes)";
  if (op_of(c->op) == MPI_OP_NULL) return "MPI has no average reduction";
  return NULL;
}

static int failed(const char* what, int error) {
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(error, message, &length);
  fprintf(stderr, "mpi-bench: %s failed: %s\n", what, message);
  return -1;
}

/* sendrecv under -a 1: MPI_Irecv and MPI_Isend, then MPI_Waitall, as tutti-bench posts
 * a tutti_recv and a tutti_send with works. */
static int send_and_receive(const bench_case* c, const void* send, void* recv, int count, MPI_Datatype type,
                            MPI_Comm comm) {
  MPI_Request requests[2];
  int error = MPI_Irecv(recv, count, type, c->peer, 0, comm, &requests[0]);
  if (error == MPI_SUCCESS) error = MPI_Isend(send, count, type, c->peer, 0, comm, &requests[1]);
  if (error != MPI_SUCCESS) return failed("MPI_Irecv and MPI_Isend", error);
  error = MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
  return error == MPI_SUCCESS ? 0 : failed("MPI_Waitall", error);
}

/* With async, the nonblocking call (MPI_Iallreduce, ...) and MPI_Wait: the same
 * issue-then-wait as tutti's work. */
static int collective(void* self, const bench_case* c, const void* send, void* recv, size_t count_arg) {
  MPI_Comm comm = *(MPI_Comm*)self;
  MPI_Datatype type = datatype_of(c->dtype);
  MPI_Op op = op_of(c->op);
  int count = (int)count_arg, root = c->root;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Request* r = c->async ? &request : NULL;
  int error = MPI_SUCCESS;
  const char* what = "";
  switch (c->coll) {
    case BENCH_ALL_REDUCE:
      what = "MPI_Allreduce";
      if (c->in_place) send = MPI_IN_PLACE;
      error =
          r ? MPI_Iallreduce(send, recv, count, type, op, comm, r) : MPI_Allreduce(send, recv, count, type, op, comm);
      break;
    case BENCH_BROADCAST:
      what = "MPI_Bcast";
      error = r ? MPI_Ibcast(recv, count, type, root, comm, r) : MPI_Bcast(recv, count, type, root, comm);
      break;
    case BENCH_ALL_GATHER:
      what = "MPI_Allgather";
      error = r ? MPI_Iallgather(send, count, type, recv, count, type, comm, r)
                : MPI_Allgather(send, count, type, recv, count, type, comm);
      break;
    case BENCH_REDUCE_SCATTER:
      what = "MPI_Reduce_scatter_block";
      error = r ? MPI_Ireduce_scatter_block(send, recv, count, type, op, comm, r)
                : MPI_Reduce_scatter_block(send, recv, count, type, op, comm);
      break;
    case BENCH_REDUCE:
      what = "MPI_Reduce";
      error = r ? MPI_Ireduce(send, recv, count, type, op, root, comm, r)
                : MPI_Reduce(send, recv, count, type, op, root, comm);
      break;
    case BENCH_GATHER:
      what = "MPI_Gather";
      error = r ? MPI_Igather(send, count, type, recv, count, type, root, comm, r)
                : MPI_Gather(send, count, type, recv, count, type, root, comm);
      break;
    case BENCH_SCATTER:
      what = "MPI_Scatter";
      error = r ? MPI_Iscatter(send, count, type, recv, count, type, root, comm, r)
                : MPI_Scatter(send, count, type, recv, count, type, root, comm);
      break;
    case BENCH_ALL_TO_ALL:
      what = "MPI_Alltoall";
      error = r ? MPI_Ialltoall(send, count, type, recv, count, type, comm, r)
                : MPI_Alltoall(send, count, type, recv, count, type, comm);
      break;
    case BENCH_BARRIER:
      what = "MPI_Barrier";
      error = r ? MPI_Ibarrier(comm, r) : MPI_Barrier(comm);
      break;
    case BENCH_SENDRECV:
      what = "MPI_Sendrecv";
      if (r) return send_and_receive(c, send, recv, count, type, comm);
      error = MPI_Sendrecv(send, count, type, c->peer, 0, recv, count, type, c->peer, 0, comm, MPI_STATUS_IGNORE);
      break;
  }
  if (error == MPI_SUCCESS && r) error = MPI_Wait(r, MPI_STATUS_IGNORE);
  return error == MPI_SUCCESS ? 0 : failed(what, error);
}

static int barrier(void* self) {
  int error = MPI_Barrier(*(MPI_Comm*)self);
  return error == MPI_SUCCESS ? 0 : failed("MPI_Barrier", error);
}

static int all_reduce_f64(void* self, double* values, size_t n, int max) {
  int error = MPI_Allreduce(MPI_IN_PLACE, values, (int)n, MPI_DOUBLE, max ? MPI_MAX : MPI_SUM, *(MPI_Comm*)self);
  return error == MPI_SUCCESS ? 0 : failed("MPI_Allreduce (of the timings)", error);
}

static void* shared_alloc(void* self, size_t bytes) {
  (void)self;
  void* buffer = NULL;
  int error = MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &buffer);
  if (error != MPI_SUCCESS) {
    failed("MPI_Alloc_mem", error);
    return NULL;
  }
  return buffer;
}

static void shared_free(void* self, void* buffer) {
  (void)self;
  int error = MPI_Free_mem(buffer);
  if (error != MPI_SUCCESS) failed("MPI_Free_mem", error);
}

int main(int argc, char** argv) {
  if (bench_help(argc, argv, "mpi-bench")) return 0;
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  /* Errors come back as codes (printed by failed()) instead of aborting inside MPI. */
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  version[strcspn(version, ",\n")] = '\0'; /* "Open MPI v4.1.4" */

  bench_backend backend = {"mpi-bench",    version,     rank, size, &comm, collective,   barrier,
                           all_reduce_f64, unsupported, NULL, NULL, NULL,  shared_alloc, shared_free};
  int status = bench_main(argc, argv, &backend);
  if (status == BENCH_EXIT_FAILED) MPI_Abort(comm, status);
  MPI_Finalize();
  return status;
}
