/* tutti.h: the whole public C API of tutti, a collective-communication runtime.
 *
 * Plain C99, for C and C++ programs and for every FFI (Python's ctypes, Lua, ...):
 * opaque handles, fixed-width integers, plain enums, no macros you must expand.
 *
 * Thread safety and blocking
 *   - A tutti_comm may be used by one thread at a time, except tutti_comm_abort,
 *     which any thread may call at any time.
 *   - The version, status and config functions may be called from any thread.
 *   - tutti_last_error() is per thread: it holds the message of the last call that
 *     failed on the calling thread, until the next call that fails on that thread.
 *   - Every call that waits has a bound (a timeout in the config or in the call) and
 *     returns TUTTI_ERR_TIMEOUT past it; none waits forever.
 *   Each declaration carries one line in the form
 *     [which threads] [how long it may block] [the statuses it returns].
 *
 * Handles
 *   A constructor that fails leaves *out == NULL: there is nothing to release. A
 *   handle passed after it was destroyed is reported as TUTTI_ERR_INVALID_ARGUMENT
 *   on a best-effort basis (reading freed memory is still undefined): clear your
 *   pointer when you destroy it.
 *
 * Failures
 *   Every rank's event loop sends the rendezvous store a heartbeat each
 *   TUTTI_HEARTBEAT_INTERVAL_MS (from its own thread: a rank that computes without
 *   calling tutti stays alive). A rank whose process ends without destroying its
 *   communicators (killed, crashed, exited) is declared lost at once; one that stays
 *   silent for TUTTI_HEARTBEAT_TIMEOUT_MS (stopped, frozen, cut off) is declared lost
 *   then. Every pending and later operation of each communicator it belongs to then
 *   fails with ERR_PEER_LOST on every rank, within milliseconds of the store
 *   noticing, and tutti_last_error() names the lost rank, its host and pid, why it
 *   was declared lost, what it was last doing, and the operation that failed. Losing
 *   the store's host (rank 0, or tutti launch) is a loss too. Send buffers are never
 *   written; receive buffers of failed operations are undefined. As in MPI's ULFM,
 *   an operation under way at the loss may still complete on some ranks while it
 *   fails on others; tutti_comm_shrink then gives the survivors a fresh communicator.
 *
 * ABI
 *   Symbols are only ever added while the major version stays the same, and struct
 *   fields only ever appended. TUTTI_VERSION_MAJOR changes on an ABI break; the
 *   library's SONAME is libtutti.so.0 until 1.0.
 */
#ifndef TUTTI_H
#define TUTTI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TUTTI_API __attribute__((visibility("default")))
#else
#define TUTTI_API
#endif

/* ---------------------------------------------------------------- versions */

#define TUTTI_VERSION_MAJOR 0
#define TUTTI_VERSION_MINOR 1
#define TUTTI_VERSION_PATCH 0
#define TUTTI_VERSION_HEX ((TUTTI_VERSION_MAJOR << 16) | (TUTTI_VERSION_MINOR << 8) | TUTTI_VERSION_PATCH)

/* The library's TUTTI_VERSION_HEX; compare its major (>> 16) with the header's.
 * [any thread] [never blocks] */
TUTTI_API uint32_t tutti_version(void);
/* "0.1.0". [any thread] [never blocks] */
TUTTI_API const char* tutti_version_string(void);

/* ---------------------------------------------------------------- statuses */

/* XX(name, value, message). Values are stable forever and never reused. */
#define TUTTI_STATUS_MAP(XX)                                                                          \
  XX(OK, 0, "success")                                                                                \
  XX(INPROGRESS, 1, "still running: the wait's own time ran out, not the operation's")                \
  XX(ERR_INVALID_ARGUMENT, -1, "invalid argument (tutti_last_error() says which and how to fix it)")  \
  XX(ERR_TIMEOUT, -2, "timed out (tutti_last_error() names what was waited for, and which ranks)")    \
  XX(ERR_PEER_LOST, -3, "a peer rank or the rendezvous store was lost (tutti_last_error() names it)") \
  XX(ERR_MISMATCH, -4, "ranks disagree (tutti_last_error() names the ranks and the fields)")          \
  XX(ERR_ABORTED, -5, "the communicator was aborted")                                                 \
  XX(ERR_TRANSPORT, -6, "a network or transport failure (tutti_last_error() names the address)")      \
  XX(ERR_UNSUPPORTED, -7, "not supported by this build or on this communicator")                      \
  XX(ERR_NO_MEMORY, -8, "out of memory")                                                              \
  XX(ERR_DENIED, -9, "denied: authentication or permission failed")                                   \
  XX(ERR_INTERNAL, -10, "internal error in tutti (please report it with tutti_last_error())")

typedef enum tutti_status {
#define TUTTI_STATUS_ENUM_ENTRY(name, value, message) TUTTI_##name = value,
  TUTTI_STATUS_MAP(TUTTI_STATUS_ENUM_ENTRY)
#undef TUTTI_STATUS_ENUM_ENTRY
} tutti_status;

/* The message of a status, e.g. "timed out (...)"; never NULL, also for unknown values.
 * [any thread] [never blocks] */
TUTTI_API const char* tutti_status_string(tutti_status status);
/* The name of a status, e.g. "TUTTI_ERR_TIMEOUT"; "TUTTI_ERR_UNKNOWN" for other values.
 * [any thread] [never blocks] */
TUTTI_API const char* tutti_status_name(tutti_status status);
/* The detailed message of the last call that failed on this thread ("" if none):
 * what went wrong, where, and how to fix it. Valid until the next failing call on
 * this thread. [any thread] [never blocks] */
TUTTI_API const char* tutti_last_error(void);

/* ---------------------------------------------------------------- configuration */

/* Settings for tutti_comm_init. Fill it with tutti_config_init, then set fields.
 * Fields are only ever appended; the library reads config_size bytes of it. */
typedef struct tutti_config {
  size_t struct_size; /* set by tutti_config_init; do not touch */
  uint32_t abi_magic; /* set by tutti_config_init; do not touch */
  /* This process's rank and the number of ranks; -1 takes them from the launcher's
   * environment (tutti launch, torchrun-style RANK/WORLD_SIZE, Slurm, Open MPI, PMI). */
  int32_t rank;
  int32_t world_size;
  /* "tcp://HOST:PORT" (rank 0 listens there), "file:///PATH" (a file on a shared file
   * system where ranks meet) or "env://" (the launcher's variables); NULL takes
   * TUTTI_INIT_METHOD, else "env://". Copied during tutti_comm_init. */
  const char* init_method;
  /* How long rendezvous may take; -1: TUTTI_INIT_TIMEOUT_MS, else 120000. */
  int64_t init_timeout_ms;
  /* How long one operation may take; -1: TUTTI_OP_TIMEOUT_MS, else 300000. */
  int64_t op_timeout_ms;
  /* A name for messages and logs; NULL: "world". Copied during tutti_comm_init. */
  const char* name;
  /* A folder where this process writes a timeline of its operations (Chrome trace
   * JSON, one file per process; docs/trace.md); NULL takes TUTTI_TRACE, else no trace.
   * TUTTI_TRACE, when set, wins. The process's first tutti_comm_init starts the trace:
   * later ones write to it. Copied during tutti_comm_init. */
  const char* trace;
} tutti_config;

/* Fills config with defaults; pass sizeof(tutti_config) as config_size, so that a
 * newer library never writes past an older caller's struct.
 * [any thread] [never blocks] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_config_init(tutti_config* config, size_t config_size);

/* ---------------------------------------------------------------- communicators */

typedef struct tutti_comm tutti_comm; /* opaque; always used as tutti_comm* */

/* Joins the job: finds this rank's place (config, else the environment), meets the
 * other ranks at the rendezvous and returns a communicator of all of them. config may
 * be NULL for all defaults. Collective: every rank of the job must call it.
 * [any thread] [blocks <= init_timeout_ms]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT (names the ranks that never arrived)
 *  | ERR_TRANSPORT | ERR_MISMATCH | ERR_PEER_LOST | ERR_NO_MEMORY] */
TUTTI_API tutti_status tutti_comm_init(const tutti_config* config, tutti_comm** out);

/* This rank's place. [one thread per comm] [never blocks] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_comm_rank(const tutti_comm* comm, int32_t* rank);
TUTTI_API tutti_status tutti_comm_size(const tutti_comm* comm, int32_t* size);
/* Rank among the ranks of this comm on the same node, how many those are, and the
 * index of this node among the comm's nodes (nodes numbered by their lowest rank).
 * [one thread per comm] [never blocks] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_comm_local_rank(const tutti_comm* comm, int32_t* local_rank);
TUTTI_API tutti_status tutti_comm_local_size(const tutti_comm* comm, int32_t* local_size);
TUTTI_API tutti_status tutti_comm_node_rank(const tutti_comm* comm, int32_t* node_rank);

/* Passed as color to tutti_comm_split by ranks that join no new communicator. */
#define TUTTI_UNDEFINED (-1)

/* Splits comm as MPI_Comm_split does: ranks passing the same color form a new
 * communicator, ordered by key, then by their rank in comm. A rank passing
 * TUTTI_UNDEFINED gets *out == NULL. Collective over comm.
 * [one thread per comm] [blocks <= op_timeout_ms]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT (names the ranks that never joined)
 *  | ERR_ABORTED | ERR_PEER_LOST] */
TUTTI_API tutti_status tutti_comm_split(tutti_comm* comm, int32_t color, int32_t key, tutti_comm** out);

/* After a loss (ERR_PEER_LOST), makes *survivors: a new communicator of the ranks of
 * comm that the rendezvous store has not declared lost, keeping their order (as
 * MPIX_Comm_shrink and ncclCommShrink do). Collective over every surviving rank, each
 * of which must call it; works on a comm that failed or was aborted, which must
 * still be destroyed. A rank that was itself declared lost (stopped for longer than
 * the heartbeat timeout, then continued) gets ERR_PEER_LOST and should exit.
 * [one thread per comm] [blocks <= op_timeout_ms]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT (names the ranks that neither came nor
 *  were declared lost) | ERR_PEER_LOST] */
TUTTI_API tutti_status tutti_comm_shrink(tutti_comm* comm, tutti_comm** survivors);

/* Grows comm by count ranks (as ncclCommGrow): makes *grown, a communicator of comm's
 * ranks, which keep their numbers, and of the next count processes that call
 * tutti_comm_join on this job, numbered from comm's size up in the order they called
 * it. New ranks take the next numbers, not those of ranks lost before: a shrink has
 * already numbered the survivors without holes, and every survivor keeps its rank
 * (its shard, its place in a ring). Collective over comm: every rank calls it with the
 * same count. When a joiner does not come within op_timeout_ms, a rank does not call
 * it or is lost, or the counts differ, it fails on every rank and on the joiners it
 * had seated, with rank 0's reason; comm stays usable either way, and is destroyed
 * as usual. Under tutti launch --restart, the ranks the launcher restarts are the
 * joiners (docs/elastic.md).
 * [one thread per comm] [blocks <= 2 x op_timeout_ms: the admission, then the meeting]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT (how many joiners came, or which ranks never
 *  called it) | ERR_MISMATCH (the counts) | ERR_PEER_LOST | ERR_ABORTED] */
TUTTI_API tutti_status tutti_comm_grow(tutti_comm* comm, int32_t count, tutti_comm** grown);

/* Joins a running job as one of the new ranks of a tutti_comm_grow: reaches the job's
 * store (config's init_method, else the environment: tutti launch --restart sets it
 * for the ranks it restarts, TUTTI_ADDR=host:port alone will do, with TUTTI_SECRET
 * where the job has one), waits for the job's ranks to grow, and returns the grown
 * communicator, named as its other ranks name it. config may be NULL; its rank and
 * world_size must be -1 (the grow decides them, and a launcher's are ignored), and its
 * name is not used. init_timeout_ms bounds the wait for a grow, op_timeout_ms the
 * meeting after it. [any thread]
 * [blocks <= init_timeout_ms + 2 x op_timeout_ms]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT (no grow admitted it) | ERR_DENIED (a wrong
 *  secret) | ERR_TRANSPORT | the failure of the grow that seated it] */
TUTTI_API tutti_status tutti_comm_join(const tutti_config* config, tutti_comm** out);

/* Sets how long each operation issued on comm from now on may take, in ms (the
 * config's op_timeout_ms, which TUTTI_OP_TIMEOUT_MS overrides, until then); those
 * issued before keep theirs. tutti_comm_split and tutti_comm_shrink give the
 * communicators they make comm's current value. E.g. the tutti REPL lets its own
 * communicator wait hours for the next line and gives the user's a few seconds.
 * [one thread per comm] [never blocks] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_comm_set_op_timeout(tutti_comm* comm, int64_t op_timeout_ms);

/* Writes to file descriptor fd (2 for stderr) why comm is unusable, if it is (after
 * an abort or a loss), then its recent collectives, one per line, oldest first, e.g.
 *   #41 broadcast float32 x 1024 root 0: done in 0.2 ms, 3.1 s ago
 *   #42 all_reduce float32 x 1024 sum: running for 3.1 s
 * The last 64 are kept. Setting TUTTI_DUMP_SIGNAL=USR1 makes `kill -USR1 PID`
 * write this for every communicator of the process. [any thread] [never blocks
 * but on fd] [OK | ERR_INVALID_ARGUMENT | ERR_TRANSPORT (fd cannot be written)] */
TUTTI_API tutti_status tutti_comm_dump(const tutti_comm* comm, int fd);

/* Aborts comm: every pending and later operation on it fails with ERR_ABORTED.
 * The handle must still be destroyed. [any thread, any time] [returns within 1 s]
 * [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_comm_abort(tutti_comm* comm);

/* Releases comm. Not collective, but the rank that hosts the rendezvous store waits
 * (at most init_timeout_ms) for the others to leave before closing it.
 * Operations of comm still pending: those not yet started run first, in order, each
 * bounded by its op_timeout_ms as always; then those still waiting for a peer (a
 * receive nothing matched, a collective a peer never joined) fail with ERR_ABORTED,
 * saying the communicator was destroyed. Their works stay valid, with that status,
 * until released. To give up on all of them at once, tutti_comm_abort first.
 * NULL is accepted and does nothing. [one thread per comm]
 * [blocks <= init_timeout_ms, plus the op timeouts of operations not yet started]
 * [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_comm_destroy(tutti_comm* comm);

/* ---------------------------------------------------------------- data types and reductions */

/* Element types of collective buffers. 16-bit and 8-bit floats are reduced in float32
 * and rounded to nearest even, once per reduction step.
 * FLOAT8_E4M3 and FLOAT8_E5M2 are the OCP 8-bit floats (NCCL's ncclFloat8e4m3 and
 * ncclFloat8e5m2, torch's float8_e4m3fn and float8_e5m2). E4M3: bias 7, no infinity,
 * NaN is S.1111.111, largest finite 448. E5M2: bias 15, infinities and NaNs as in
 * IEEE binary16, largest finite 57344. A reduced value saturates: one that rounds
 * beyond the largest finite value, infinity included, becomes the largest finite
 * value of its sign (CUDA's __NV_SATFINITE, as NCCL's fp8 reductions do; unlike
 * torch's .to(float8), which gives NaN or inf). NaN stays NaN. */
typedef enum tutti_dtype {
  TUTTI_DTYPE_INT8 = 0,
  TUTTI_DTYPE_UINT8 = 1,
  TUTTI_DTYPE_INT32 = 2,
  TUTTI_DTYPE_INT64 = 3,
  TUTTI_DTYPE_FLOAT16 = 4,
  TUTTI_DTYPE_BFLOAT16 = 5,
  TUTTI_DTYPE_FLOAT32 = 6,
  TUTTI_DTYPE_FLOAT64 = 7,
  TUTTI_DTYPE_FLOAT8_E4M3 = 8,
  TUTTI_DTYPE_FLOAT8_E5M2 = 9
} tutti_dtype;

typedef enum tutti_op {
  TUTTI_OP_SUM = 0,
  TUTTI_OP_PROD = 1,
  TUTTI_OP_MIN = 2,
  TUTTI_OP_MAX = 3,
  TUTTI_OP_AVG = 4
} tutti_op;

/* ---------------------------------------------------------------- operations and work */

/* An operation in flight, returned by any collective or point-to-point call given a
 * non-NULL work pointer. Wait on it or test it, then release it exactly once. */
typedef struct tutti_work tutti_work; /* opaque; always used as tutti_work* */

/* Waits up to timeout_ms (-1: until the operation's own timeout) for work to finish,
 * and returns the operation's status; a failure's message goes to this thread's
 * tutti_last_error(). INPROGRESS (not an error: > 0) says that timeout_ms passed
 * first: work stays valid and running; wait again, test, or release it. ERR_TIMEOUT
 * is only ever the operation's own failure (its op_timeout_ms passed).
 * [any thread] [blocks <= timeout_ms]
 * [OK | INPROGRESS | ERR_INVALID_ARGUMENT | the operation's error] */
TUTTI_API tutti_status tutti_work_wait(tutti_work* work, int64_t timeout_ms);
/* Sets *done to 1 if work has finished (then wait returns at once), else 0.
 * [any thread] [never blocks] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_work_test(tutti_work* work, int* done);
/* Releases work. Releasing an unfinished operation does not cancel it: it still runs,
 * in order, and its buffers stay in use until it finishes. NULL is accepted. A release
 * may race a wait or test of the same work on another thread: a wait already under way
 * ends as it would have, with the operation's status; a call made after the release
 * gets ERR_INVALID_ARGUMENT ("already released"), as a second release does.
 * [any thread] [never blocks] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_work_release(tutti_work* work);

/* ---------------------------------------------------------------- collectives
 *
 * Arguments, in one order for all: the communicator; send buffer, receive buffer,
 * count (per rank for all_gather, reduce_scatter, gather, scatter and all_to_all;
 * all_to_allv takes an array of counts per side),
 * dtype, op, root or peer (and tag); the work out-parameter last.
 *   - work == NULL: the call blocks until the operation is done (at most the
 *     communicator's op_timeout_ms) and returns its status.
 *   - work != NULL: the call returns at once with *work set; the operation runs in
 *     the background, without the caller polling. Buffers belong to the operation
 *     from the call until it completes: do not touch them before wait/test says so.
 * Operations on one communicator run and complete in the order they were issued, on
 * every rank the same order; several may be outstanding. Every rank of comm must
 * call every collective, with the same count, dtype, op and root.
 * In place: all_reduce, reduce (root), broadcast (root): send == recv.
 *   all_gather and gather (root): send == recv + rank * count elements.
 *   reduce_scatter and scatter (root): recv == send + rank * count elements.
 *   all_to_all: send == recv. Any other overlap is ERR_INVALID_ARGUMENT.
 * Buffers that an operation does not use on this rank (recv of reduce, gather off
 * the root; send of broadcast, scatter off the root) may be NULL.
 * After a failure, the receive buffer's contents are undefined; the send buffer is
 * never written (except in place).
 * Ranks that disagree on a call (another collective, count, dtype, op or root) get
 * ERR_MISMATCH naming the rank they disagree with, at no cost: shared memory compares
 * the calls' shapes, and every message between ranks carries its call's fingerprint.
 * A rank that exchanges nothing with the one that differs (a tree broadcast with two
 * roots) may not notice. TUTTI_CHECK=1 makes every collective compare the whole
 * fingerprint across ranks first, which catches every case and names the fields, at
 * the cost of one small exchange per call.
 * Each: [one thread per comm] [blocks <= op_timeout_ms when work == NULL]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT (names the ranks that had not joined)
 *  | ERR_MISMATCH | ERR_ABORTED | ERR_PEER_LOST | ERR_TRANSPORT | ERR_NO_MEMORY] */

/* recv = send[rank 0] op send[rank 1] op ... on every rank. */
TUTTI_API tutti_status tutti_all_reduce(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                        tutti_op op, tutti_work** work);
/* recv on root only = the reduction of every rank's send. */
TUTTI_API tutti_status tutti_reduce(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                    tutti_op op, int32_t root, tutti_work** work);
/* recv on every rank = root's send. */
TUTTI_API tutti_status tutti_broadcast(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                       int32_t root, tutti_work** work);
/* recv (size * count elements) = every rank's send, in rank order. */
TUTTI_API tutti_status tutti_all_gather(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                        tutti_work** work);
/* send holds size * count elements; recv (count) = this rank's block of their reduction. */
TUTTI_API tutti_status tutti_reduce_scatter(tutti_comm* comm, const void* send, void* recv, size_t count,
                                            tutti_dtype dtype, tutti_op op, tutti_work** work);
/* recv on root (size * count elements) = every rank's send, in rank order. */
TUTTI_API tutti_status tutti_gather(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                    int32_t root, tutti_work** work);
/* recv (count) = block `rank` of root's send (size * count elements). */
TUTTI_API tutti_status tutti_scatter(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                     int32_t root, tutti_work** work);
/* Block j of send (count elements each) goes to rank j; recv's block i comes from rank i. */
TUTTI_API tutti_status tutti_all_to_all(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                        tutti_work** work);
/* all_to_all with each block of its own size and place (MPI_Alltoallv, torch's
 * all_to_all_single with splits): send_counts[j] elements at send + send_offsets[j]
 * go to rank j, and the recv_counts[i] elements from rank i land at recv +
 * recv_offsets[i]. Counts and offsets are in elements, one entry per rank of comm;
 * NULL offsets pack the blocks in rank order (each offset the sum of the counts
 * before it). What rank i sends to rank j (its send_counts[j]) must be what j
 * expects from i (j's recv_counts[i]), else both get ERR_MISMATCH naming the peer and
 * both sizes. The receive blocks may not overlap one another or any send block: there
 * is no in-place form. The arrays are read before the call returns (work != NULL: it
 * keeps copies), so they may be reused at once. It runs over the point-to-point
 * transport on one node too (no shared-memory form); every rank passes the same
 * dtype. */
TUTTI_API tutti_status tutti_all_to_allv(tutti_comm* comm, const void* send, const size_t* send_counts,
                                         const size_t* send_offsets, void* recv, const size_t* recv_counts,
                                         const size_t* recv_offsets, tutti_dtype dtype, tutti_work** work);
/* Returns once every rank has entered it. */
TUTTI_API tutti_status tutti_barrier(tutti_comm* comm, tutti_work** work);

/* ---------------------------------------------------------------- point to point
 *
 * Messages from one rank to another with the same tag arrive in the order they were
 * sent. tutti_recv accepts a message of at most count elements (a longer one is
 * ERR_INVALID_ARGUMENT, naming both sizes); tag >= 0. A send or receive given a work
 * pointer is posted once the operations issued before it have finished on this rank,
 * and does not hold up the ones issued after it: two ranks may each post a receive
 * and a send, then wait for both, without deadlock (the isend/irecv of MPI). Either
 * way it fails with ERR_TIMEOUT if it has not completed op_timeout_ms after it was
 * posted; the communicator stays usable.
 * [one thread per comm] [blocks <= op_timeout_ms when work == NULL]
 * [OK | ERR_INVALID_ARGUMENT | ERR_TIMEOUT | ERR_ABORTED | ERR_PEER_LOST | ERR_TRANSPORT] */
TUTTI_API tutti_status tutti_send(tutti_comm* comm, const void* send, size_t count, tutti_dtype dtype, int32_t peer,
                                  int32_t tag, tutti_work** work);
TUTTI_API tutti_status tutti_recv(tutti_comm* comm, void* recv, size_t count, tutti_dtype dtype, int32_t peer,
                                  int32_t tag, tutti_work** work);

/* ---------------------------------------------------------------- shared memory
 *
 * Host memory that every rank of comm on this node maps, for the buffers of large
 * collectives (from 64 KiB a block): where the send buffers that others read lie in
 * it (a broadcast's or scatter's root's; every rank's for all_gather, gather and
 * all_to_all), the ranks copy the data straight out of them, one copy instead of two
 * through the communicator's own shared memory; where every rank's send buffer of
 * all_reduce, reduce or reduce_scatter, and every result that other ranks write
 * (all_reduce's, reduce's root's), lie in it, each rank reduces its slice straight
 * from the send buffers into the results, one pass instead of three. A rank whose
 * send buffer others read returns once they are done with it. The idea of
 * MPI_Win_allocate_shared and of NCCL's buffer registration. Any collective takes it
 * like any other host memory. Where the ranks span nodes, or comm has one rank, it is
 * memory of this process alone, and collectives treat it so. */

/* Allocates `bytes` (> 0) for this rank, page-aligned and zero-filled; *ptr is valid
 * until tutti_mem_free or the destruction of comm. Collective over comm, in the order
 * of its collectives: every rank calls it, with the same bytes. Each rank maps every
 * rank's part (size * bytes of address space), and the node holds each part once.
 * A process maps at most 2^46 bytes (64 TiB) of it: bytes may be at most 2^46 / size,
 * rounded down to 4096. Every rank comes out with the same status, at once: a rank
 * given more than that, or other bytes than rank 0, or that cannot map the memory,
 * fails them all, and the message names it.
 * [one thread per comm] [blocks <= op_timeout_ms]
 * [OK | ERR_INVALID_ARGUMENT (0, or past the limit on some rank) | ERR_TIMEOUT (names
 *  the ranks that never came) | ERR_TRANSPORT (/dev/shm full, or ranks passed different
 *  bytes) | ERR_NO_MEMORY (a world of one, or ranks on several nodes: this process
 *  cannot have it) | ERR_ABORTED | ERR_PEER_LOST] */
TUTTI_API tutti_status tutti_mem_alloc(tutti_comm* comm, size_t bytes, void** ptr);
/* Frees what tutti_mem_alloc returned on comm. Every rank frees it at the same point
 * of comm's collective order (it waits for the operations issued before it); a
 * collective whose ranks disagree on which allocations are live fails with
 * ERR_MISMATCH. NULL is accepted and does nothing.
 * [one thread per comm] [never blocks but on earlier operations] [OK | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_mem_free(tutti_comm* comm, void* ptr);

/* ---------------------------------------------------------------- device buffers (CUDA)
 *
 * Every collective and point-to-point call takes CUDA device buffers as well. Device
 * calls are enqueued on the communicator's CUDA stream and their work completes on a
 * CUDA event behind them; a blocking call (work == NULL) returns once that event has
 * passed. NCCL runs them, or, where NCCL cannot (ranks sharing one GPU, a dtype or op
 * NCCL lacks, a send or receive, NCCL not loadable), the staging path copies them
 * through pinned host memory around the host collective, on the same stream; it logs
 * why once. A watchdog fails the pending works of an operation past its timeout or
 * after a lost peer (TIMEOUT naming the ranks that never joined, PEER_LOST), then
 * aborts the NCCL communicator: the GPU stays usable, and a new communicator works. The
 * first device call of a communicator must be the same collective on every rank (it
 * sets up NCCL). CUDA and NCCL are loaded at run time: without them these calls return
 * ERR_UNSUPPORTED ("CUDA is not available: ...") and host buffers work as ever. */

/* Where a communicator finds its buffers. AUTO: from each pointer
 * (cudaPointerGetAttributes) once CUDA is in use (initialised in the process before
 * tutti_comm_init, or any of the calls below made); host memory otherwise, at no cost. */
typedef enum tutti_memory {
  TUTTI_MEMORY_AUTO = 0,
  TUTTI_MEMORY_HOST = 1, /* every buffer is host memory: no check at all */
  TUTTI_MEMORY_CUDA = 2  /* every buffer is CUDA device memory */
} tutti_memory;

/* States where comm's buffers are (a call with host and device buffers mixed is
 * ERR_INVALID_ARGUMENT); AUTO and CUDA need CUDA (ERR_UNSUPPORTED without it).
 * [one thread per comm] [never blocks] [OK | ERR_INVALID_ARGUMENT | ERR_UNSUPPORTED] */
TUTTI_API tutti_status tutti_comm_set_memory(tutti_comm* comm, tutti_memory memory);
/* Sets comm's CUDA device (default: its local rank modulo the devices), before its first
 * device call. [one thread per comm] [never blocks] [OK | ERR_INVALID_ARGUMENT | ERR_UNSUPPORTED] */
TUTTI_API tutti_status tutti_comm_set_device(tutti_comm* comm, int32_t device);
/* Sets the cudaStream_t comm's device calls are enqueued on; NULL: a stream of comm's own
 * (the default), which waits for the legacy default stream's work.
 * [one thread per comm] [never blocks] [OK | ERR_INVALID_ARGUMENT | ERR_UNSUPPORTED] */
TUTTI_API tutti_status tutti_comm_set_stream(tutti_comm* comm, void* stream);
/* Makes the cudaStream_t stream wait for work's device operation without blocking the
 * host (torch's Work.wait); a host operation's work is waited for as tutti_work_wait(-1).
 * [any thread] [never blocks for device work] [OK | ERR_INVALID_ARGUMENT | ERR_TRANSPORT
 * | the operation's error, if it already failed] */
TUTTI_API tutti_status tutti_work_wait_stream(tutti_work* work, void* stream);

/* ---------------------------------------------------------------- draft API
 * Calls not yet promised: they may change or go in any 0.x release, and the ABI
 * baseline (capi/abi/) leaves them out. Their symbols carry the version TUTTI_DRAFT.
 * Define TUTTI_BUILD_DRAFT_API before including tutti.h to see them; a library built
 * without the CMake option TUTTI_BUILD_DRAFT_API=ON does not export them (as libzmq's
 * ZMQ_BUILD_DRAFT_API). */
#ifdef TUTTI_BUILD_DRAFT_API

/* Starts joining the job as tutti_comm_init does, on a thread of the library's, and
 * returns at once: TUTTI_INPROGRESS with *out set, or the error that config alone
 * shows (ERR_INVALID_ARGUMENT; *out NULL). The comm can then only be waited for
 * (tutti_comm_init_wait), aborted (tutti_comm_abort, from any thread: the init gives
 * up within about 100 ms, except during a PMIx exchange of the store's address, which
 * ends at its own deadline) or destroyed (which gives the init up, then releases it);
 * any other call on it is ERR_INVALID_ARGUMENT until the wait says OK. The NCCL
 * equivalent is ncclCommInitRankConfig with blocking = 0.
 * [any thread] [never blocks] [INPROGRESS | ERR_INVALID_ARGUMENT] */
TUTTI_API tutti_status tutti_comm_init_start(const tutti_config* config, tutti_comm** out);
/* Waits up to timeout_ms (-1: until the init's own init_timeout_ms) for a started
 * init: OK once comm has joined (it is then like one from tutti_comm_init, and OK
 * again at every later call), INPROGRESS while it is still joining, or the init's
 * error, every time it is asked, after which comm can only be destroyed: ERR_ABORTED
 * after tutti_comm_abort, ERR_TIMEOUT naming the ranks that never came, ...
 * An abort that comes just as the init succeeds leaves an aborted comm: OK here, and
 * ERR_ABORTED from every operation. [one thread per comm] [blocks <= timeout_ms]
 * [OK | INPROGRESS | ERR_INVALID_ARGUMENT | tutti_comm_init's errors] */
TUTTI_API tutti_status tutti_comm_init_wait(tutti_comm* comm, int64_t timeout_ms);

#endif /* TUTTI_BUILD_DRAFT_API */

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_H */
