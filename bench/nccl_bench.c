/* nccl-bench: bench/harness.c over raw NCCL, for comparing tutti-bench -m device with
 * the library under it on the same GPU, sizes and harness.
 *
 * Run:   tutti launch -n 1 -- build/bin/nccl-bench all_reduce -m device -b 8 -e 64M -f 4
 * (-m device is required: NCCL has only device buffers.) tutti sets the job up: the
 * ranks meet through tutti_comm_init, rank 0's ncclUniqueId reaches the others by a
 * host tutti_broadcast, and the harness's own barrier and timing reductions use the
 * tutti communicator on host memory, as mpi_bench uses MPI. Each operation is
 * enqueued on a stream of its own and waited for with cudaStreamSynchronize, which is
 * what a blocking tutti call on device buffers does; -a makes no difference here.
 * gather, scatter and all_to_all, which NCCL lacks, are refused. Device d = local rank
 * modulo the devices, as tutti's default. Built where cmake finds CUDA and NCCL. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>

#include "cuda_memory.h"
#include "harness.h"
#include "tutti.h"

typedef struct backend {
  tutti_comm* tutti;
  ncclComm_t nccl;
  cudaStream_t stream;
} backend;

#if NCCL_VERSION_CODE >= 22400
#define NCCL_HAS_FP8 1
static const ncclDataType_t nccl_dtypes[] = {ncclInt8,     ncclUint8,   ncclInt32,   ncclInt64,      ncclFloat16,
                                             ncclBfloat16, ncclFloat32, ncclFloat64, ncclFloat8e4m3, ncclFloat8e5m2};
#else
/* NCCL before 2.24 has no fp8: moved as bytes, and reductions refused (unsupported). */
#define NCCL_HAS_FP8 0
static const ncclDataType_t nccl_dtypes[] = {ncclInt8,     ncclUint8,   ncclInt32,   ncclInt64, ncclFloat16,
                                             ncclBfloat16, ncclFloat32, ncclFloat64, ncclUint8, ncclUint8};
#endif
static const ncclRedOp_t nccl_ops[] = {ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg};

static int nccl_failed(const char* what, ncclResult_t result) {
  fprintf(stderr, "nccl-bench: %s failed: %s\n", what, ncclGetErrorString(result));
  return -1;
}

static int tutti_failed(const char* what, tutti_status status) {
  fprintf(stderr, "nccl-bench: %s failed: %s: %s\n", what, tutti_status_name(status), tutti_last_error());
  return -1;
}

static int collective(void* self, const bench_case* c, const void* send, void* recv, size_t count) {
  backend* b = self;
  ncclDataType_t dtype = nccl_dtypes[c->dtype];
  ncclRedOp_t op = nccl_ops[c->op];
  ncclResult_t result = ncclInvalidUsage;
  switch (c->coll) {
    case BENCH_ALL_REDUCE: result = ncclAllReduce(send, recv, count, dtype, op, b->nccl, b->stream); break;
    case BENCH_BROADCAST: result = ncclBroadcast(recv, recv, count, dtype, c->root, b->nccl, b->stream); break;
    case BENCH_ALL_GATHER: result = ncclAllGather(send, recv, count, dtype, b->nccl, b->stream); break;
    case BENCH_REDUCE_SCATTER: result = ncclReduceScatter(send, recv, count, dtype, op, b->nccl, b->stream); break;
    case BENCH_REDUCE: result = ncclReduce(send, recv, count, dtype, op, c->root, b->nccl, b->stream); break;
    default: break; /* refused by unsupported() */
  }
  if (result != ncclSuccess) return nccl_failed("the collective", result);
  cudaError_t error = cudaStreamSynchronize(b->stream);
  if (error == cudaSuccess) return 0;
  fprintf(stderr, "nccl-bench: cudaStreamSynchronize: %s\n", cudaGetErrorString(error));
  return -1;
}

static int barrier(void* self) {
  tutti_status status = tutti_barrier(((backend*)self)->tutti, NULL);
  return status == TUTTI_OK ? 0 : tutti_failed("tutti_barrier", status);
}

static int all_reduce_f64(void* self, double* values, size_t n, int max) {
  tutti_status status = tutti_all_reduce(((backend*)self)->tutti, values, values, n, TUTTI_DTYPE_FLOAT64,
                                         max ? TUTTI_OP_MAX : TUTTI_OP_SUM, NULL);
  return status == TUTTI_OK ? 0 : tutti_failed("tutti_all_reduce (of the timings)", status);
}

static const char* unsupported(void* self, const bench_case* c) {
  (void)self;
  if (c->coll == BENCH_GATHER || c->coll == BENCH_SCATTER || c->coll == BENCH_ALL_TO_ALL)
    return "NCCL has no such collective (tutti builds it from grouped sends and receives)";
  if (c->coll == BENCH_BARRIER) return "NCCL has no barrier";
  if (c->coll == BENCH_SENDRECV) return "nccl-bench times collectives only (tutti-bench and mpi-bench time sendrecv)";
  if (!NCCL_HAS_FP8 && (c->dtype == BENCH_FLOAT8_E4M3 || c->dtype == BENCH_FLOAT8_E5M2) && bench_reduces(c->coll))
    return "this NCCL (before 2.24) has no fp8 reductions";
  return NULL;
}

static void* device_alloc(void* self, size_t bytes) {
  (void)self;
  return bench_cuda_alloc("nccl-bench", bytes);
}

static int device_copy(void* self, void* dst, const void* src, size_t bytes, int to_device) {
  (void)self;
  return bench_cuda_copy("nccl-bench", dst, src, bytes, to_device);
}

int main(int argc, char** argv) {
  if (bench_help(argc, argv, "nccl-bench")) return 0;
  backend b = {NULL, NULL, NULL};
  /* The harness's barrier and timings run on host memory: this communicator must not
   * look for device pointers. */
  tutti_status status = tutti_comm_init(NULL, &b.tutti);
  if (status != TUTTI_OK) return tutti_failed("tutti_comm_init", status) ? 1 : 0;
  tutti_comm_set_memory(b.tutti, TUTTI_MEMORY_HOST);
  int32_t rank = 0, size = 1, local_rank = 0;
  tutti_comm_rank(b.tutti, &rank);
  tutti_comm_size(b.tutti, &size);
  tutti_comm_local_rank(b.tutti, &local_rank);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    fprintf(stderr, "nccl-bench: no CUDA device (cudaGetDeviceCount: %s)\n", cudaGetErrorString(cudaGetLastError()));
    return BENCH_EXIT_FAILED;
  }
  cudaSetDevice(local_rank % devices);
  cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking);
  ncclUniqueId id;
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) return nccl_failed("ncclGetUniqueId", ncclSystemError) ? 3 : 0;
  status = tutti_broadcast(b.tutti, &id, &id, sizeof id, TUTTI_DTYPE_UINT8, 0, NULL);
  if (status != TUTTI_OK) return tutti_failed("tutti_broadcast of the ncclUniqueId", status) ? 3 : 0;
  ncclResult_t result = ncclCommInitRank(&b.nccl, size, id, rank);
  if (result != ncclSuccess) return nccl_failed("ncclCommInitRank", result) ? 3 : 0;

  int version = 0;
  ncclGetVersion(&version);
  char library[64];
  snprintf(library, sizeof library, "NCCL %d.%d.%d", version / 10000, version / 100 % 100, version % 100);
  bench_backend harness = {"nccl-bench",    library,     rank,           size,        &b,
                           collective,      barrier,     all_reduce_f64, unsupported, device_alloc,
                           bench_cuda_free, device_copy, NULL,           NULL};
  int exit_status = bench_main(argc, argv, &harness);
  if (exit_status == BENCH_EXIT_FAILED) return exit_status;
  ncclCommDestroy(b.nccl);
  cudaStreamDestroy(b.stream);
  tutti_comm_destroy(b.tutti);
  return exit_status;
}
