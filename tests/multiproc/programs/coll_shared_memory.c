/* coll_shared_memory: collectives on memory from tutti_mem_alloc, for
 * test_shared_memory.c.
 *
 *   coll_shared_memory          every collective that moves data (broadcast,
 *                               all_gather, gather, scatter, all_to_all, all_reduce,
 *                               reduce, reduce_scatter), blocking and asynchronous, on the
 *                               world and on an even/odd split, with buffers in
 *                               shared memory (read in place from 64 KiB) and not
 *                               (one rank's buffer private: through the slots)
 *   coll_shared_memory sizes    sizes that no rank can have, or that rank 1 alone is
 *                               given: every rank fails at once, alike, and goes on
 *   coll_shared_memory abandon  rank 0 dies while its segment awaits rank 1's mapping
 *
 * Prints "FAIL rank R shared_memory: ..." for each failed check and
 * "coll_shared_memory: rank R, N checks, F failures"; exits 1 if F > 0. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti.h"

static int world_rank, checks, failures;

__attribute__((format(printf, 1, 2))) static void fail(const char* format, ...) {
  char what[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  printf("FAIL rank %d shared_memory: %s\n", world_rank, what);
  ++failures;
}

static int ok(tutti_status status, const char* call) {
  ++checks;
  if (status == TUTTI_OK) return 1;
  fail("%s returned %s: %s", call, tutti_status_name(status), tutti_last_error());
  return 0;
}

static unsigned char pattern(int rank, size_t i) { return (unsigned char)(rank * 37 + i * 11 + 1); }

static void expect_blocks(const char* what, size_t bytes, const unsigned char* out, int blocks, int from) {
  ++checks;
  for (int r = 0; r < blocks; ++r) {
    for (size_t i = 0; i < bytes; ++i) {
      int owner = from >= 0 ? from : r;
      if (out[r * bytes + i] != pattern(owner, i)) {
        fail("%s of %zu bytes: byte %zu of block %d is %d, want %d", what, bytes, i, r, out[r * bytes + i],
             pattern(owner, i));
        return;
      }
    }
  }
}

/* int32 element i of rank r's vector, and the sum of element i over `size` ranks. */
static int32_t value(int rank, size_t i) { return (int32_t)((rank * 7 + i * 3) % 11) - 5; }

static void fill(int32_t* vector, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) vector[i] = value(rank, i);
}

static void expect_sums(const char* what, const int32_t* out, size_t count, int size, size_t first) {
  ++checks;
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int r = 0; r < size; ++r) want += value(r, first + i);
    if (out[i] != want) {
      fail("%s of %zu int32: element %zu is %d, want %d", what, count, i, out[i], want);
      return;
    }
  }
}

/* all_reduce (in place, asynchronous; then with rank 1's result private), reduce to
 * the last rank and reduce_scatter, int32 SUM, on vectors of `bytes`. */
static void reduce_all_ways(tutti_comm* comm, const char* name, size_t bytes, unsigned char* send, unsigned char* recv,
                            unsigned char* private_buffer) {
  int32_t rank = 0, size = 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  const size_t count = bytes / 4, per_rank = count / size;
  int32_t* vector = (int32_t*)send;
  char what[128];
  fill(vector, count, rank);
  snprintf(what, sizeof what, "%s asynchronous all_reduce in place", name);
  tutti_work* work = NULL;
  if (ok(tutti_all_reduce(comm, vector, vector, count, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, &work), what) &&
      ok(tutti_work_wait(work, -1), what)) {
    expect_sums(what, vector, count, size, 0);
  }
  tutti_work_release(work);
  fill(vector, count, rank);
  int32_t* result = (int32_t*)(rank == 1 ? private_buffer : recv);
  snprintf(what, sizeof what, "%s all_reduce (rank 1's result private)", name);
  if (ok(tutti_all_reduce(comm, vector, result, count, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL), what)) {
    expect_sums(what, result, count, size, 0);
  }
  const int root = size - 1;
  snprintf(what, sizeof what, "%s reduce to %d", name, root);
  if (ok(tutti_reduce(comm, vector, rank == root ? recv : NULL, count, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, root, NULL),
         what) &&
      rank == root) {
    expect_sums(what, (const int32_t*)recv, count, size, 0);
  }
  snprintf(what, sizeof what, "%s reduce_scatter", name);
  if (ok(tutti_reduce_scatter(comm, vector, recv, per_rank, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL), what)) {
    expect_sums(what, (const int32_t*)recv, per_rank, size, rank * per_rank);
  }
}

/* gather to the last rank (then into a private result), scatter from it and all_to_all,
 * blocks of bytes / size (rank q's block for rank r carries pattern q * 8 + r). */
static void move_all_ways(tutti_comm* comm, const char* name, size_t bytes, unsigned char* send, unsigned char* recv,
                          unsigned char* private_buffer) {
  int32_t rank = 0, size = 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  const size_t block = bytes / size;
  const int root = size - 1;
  char what[128];
  for (int private_result = 0; private_result <= 1; ++private_result) {
    unsigned char* result = private_result ? private_buffer : recv;
    for (size_t i = 0; i < block; ++i) send[i] = pattern(rank, i);
    snprintf(what, sizeof what, "%s gather to %d%s", name, root, private_result ? " (result private)" : "");
    if (ok(tutti_gather(comm, send, rank == root ? result : NULL, block, TUTTI_DTYPE_UINT8, root, NULL), what) &&
        rank == root) {
      expect_blocks(what, block, result, size, -1);
    }
  }
  for (size_t i = 0; rank == root && i < block * size; ++i) send[i] = pattern((int)(i / block), i % block);
  snprintf(what, sizeof what, "%s scatter from %d", name, root);
  if (ok(tutti_scatter(comm, rank == root ? send : NULL, recv, block, TUTTI_DTYPE_UINT8, root, NULL), what)) {
    expect_blocks(what, block, recv, 1, rank);
  }
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < block; ++i) send[r * block + i] = pattern(rank * 8 + r, i);
  }
  snprintf(what, sizeof what, "%s asynchronous all_to_all", name);
  tutti_work* work = NULL;
  if (ok(tutti_all_to_all(comm, send, recv, block, TUTTI_DTYPE_UINT8, &work), what) &&
      ok(tutti_work_wait(work, -1), what)) {
    for (int r = 0; r < size; ++r) expect_blocks(what, block, recv + r * block, 1, r * 8 + rank);
  }
  tutti_work_release(work);
}

/* The collectives on comm with buffers in one allocation from it. */
static void exercise(tutti_comm* comm, const char* name) {
  static const size_t sizes[] = {1000, 100000, 1000003};
  int32_t rank = 0, size = 1;
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  const size_t largest = sizes[2];
  unsigned char* region = NULL;
  if (!ok(tutti_mem_alloc(comm, largest * (size + 1), (void**)&region), "tutti_mem_alloc")) return;
  unsigned char* send = region;
  unsigned char* recv = region + largest;
  unsigned char* private_block = malloc(largest);
  char what[128];
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    size_t bytes = sizes[k];
    int root = size - 1;
    for (size_t i = 0; i < bytes; ++i) send[i] = rank == root ? pattern(root, i) : 0;
    snprintf(what, sizeof what, "%s broadcast from %d", name, root);
    if (ok(tutti_broadcast(comm, send, send, bytes, TUTTI_DTYPE_UINT8, root, NULL), what)) {
      expect_blocks(what, bytes, send, 1, root);
    }
    for (int private_one = 0; private_one <= 1; ++private_one) {
      unsigned char* mine = private_one && rank == 1 ? private_block : send;
      for (size_t i = 0; i < bytes; ++i) mine[i] = pattern(rank, i);
      memset(recv, 0, bytes * size);
      snprintf(what, sizeof what, "%s asynchronous all_gather%s", name, private_one ? " (rank 1's block private)" : "");
      tutti_work* work = NULL;
      if (ok(tutti_all_gather(comm, mine, recv, bytes, TUTTI_DTYPE_UINT8, &work), what) &&
          ok(tutti_work_wait(work, -1), what)) {
        expect_blocks(what, bytes, recv, size, -1);
      }
      tutti_work_release(work);
    }
    reduce_all_ways(comm, name, bytes, send, recv, private_block);
    move_all_ways(comm, name, bytes, send, recv, private_block);
  }
  free(private_block);
  ok(tutti_mem_free(comm, region), "tutti_mem_free");
}

/* One tutti_mem_alloc of `bytes` (rank 1's `rank1_bytes`): every rank must come out
 * with `want` (a message holding `fragment`) at once, all ranks alike, which an
 * all_gather of the statuses checks; memory that came is written end to end, read
 * back as zeros first, and freed. */
static void expect_alloc(tutti_comm* comm, size_t bytes, size_t rank1_bytes, tutti_status want, const char* fragment) {
  void* memory = NULL;
  tutti_status status = tutti_mem_alloc(comm, world_rank == 1 ? rank1_bytes : bytes, &memory);
  ++checks;
  if (status != want || (want != TUTTI_OK && !strstr(tutti_last_error(), fragment))) {
    fail("tutti_mem_alloc(%zu) (rank 1: %zu) gave %s (%s), want %s with \"%s\"", bytes, rank1_bytes,
         tutti_status_name(status), status == TUTTI_OK ? "" : tutti_last_error(), tutti_status_name(want), fragment);
  }
  if (status == TUTTI_OK) {
    unsigned char* bytes_at = memory;
    size_t mine = world_rank == 1 ? rank1_bytes : bytes;
    if (bytes_at[0] != 0 || bytes_at[mine - 1] != 0) fail("tutti_mem_alloc(%zu) is not zero-filled", mine);
    memset(bytes_at, 0x5a, mine);
    ok(tutti_mem_free(comm, memory), "tutti_mem_free");
  }
  int32_t size = 1;
  tutti_comm_size(comm, &size);
  int32_t mine = status, all[64];
  if (size > 64 || !ok(tutti_all_gather(comm, &mine, all, 1, TUTTI_DTYPE_INT32, NULL), "all_gather of statuses"))
    return;
  for (int r = 0; r < size; ++r) {
    if (all[r] != mine) {
      fail("tutti_mem_alloc(%zu) (rank 1: %zu): rank %d got %s, this rank %s", bytes, rank1_bytes, r,
           tutti_status_name((tutti_status)all[r]), tutti_status_name(status));
    }
  }
}

/* Sizes that are wrong on one rank or on all, the largest a size_t holds, those whose
 * page-rounded product with the world size wraps around, the limit's edges and random
 * sizes: every one fails at once, on every rank alike, and the communicator goes on. */
static void bad_sizes(tutti_comm* world, int size) {
  const size_t most = SIZE_MAX;
  const char* mapped_limit = "more than tutti_mem_alloc can map";
  expect_alloc(world, 4096, 8192, TUTTI_ERR_TRANSPORT, "pass the same bytes to tutti_mem_alloc");
  expect_alloc(world, 4096, most, TUTTI_ERR_INVALID_ARGUMENT, "rank 1 asked for 18446744073709551615 bytes");
  const size_t wrapping[] = {most, most - 4095, (most >> 1) + 2, most / (size_t)size + 1, most / (size_t)size + 4097};
  for (size_t k = 0; k < sizeof wrapping / sizeof wrapping[0]; ++k) {
    expect_alloc(world, wrapping[k], wrapping[k], TUTTI_ERR_INVALID_ARGUMENT, mapped_limit);
  }
  /* The limit, as tutti.h states it: 2^46 bytes of mapping in one process. */
  const size_t part = ((size_t)1 << 46) / (size_t)size / 4096 * 4096;
  expect_alloc(world, part + 1, part + 1, TUTTI_ERR_INVALID_ARGUMENT, mapped_limit);
  /* At the limit the size is taken, and /dev/shm (a tmpfs of at most the RAM) refuses it. */
  expect_alloc(world, part, part, TUTTI_ERR_TRANSPORT, "cannot reserve");
  /* Random sizes, the same sequence on every rank: small ones come, those past the
   * limit are refused, and those between half the limit and the limit do not fit. */
  unsigned long long state = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < 45; ++k) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    size_t random = (size_t)(state ^ (state >> 29));
    if (k % 3 == 0) {
      size_t small = random % (1 << 20) + 1;
      expect_alloc(world, small, small, TUTTI_OK, "");
    } else if (k % 3 == 1) {
      size_t past = part + 1 + random % (most - part);
      expect_alloc(world, past, past, TUTTI_ERR_INVALID_ARGUMENT, mapped_limit);
    } else {
      size_t large = part / 2 + random % (part / 2);
      expect_alloc(world, large, large, TUTTI_ERR_TRANSPORT, "cannot reserve");
    }
  }
  /* Still in step: a region every rank maps, reduced in place. */
  void* region = NULL;
  const size_t count = 1 << 16;
  if (ok(tutti_mem_alloc(world, count * 4, &region), "tutti_mem_alloc after the refusals")) {
    fill(region, count, world_rank);
    if (ok(tutti_all_reduce(world, region, region, count, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL),
           "tutti_all_reduce after the refusals")) {
      expect_sums("all_reduce after the refusals", region, count, size, 0);
    }
    ok(tutti_mem_free(world, region), "tutti_mem_free");
  }
}

/* Rank 0 kills itself as soon as its segment for a tutti_mem_alloc is in /dev/shm,
 * before rank 1 (which never calls it) has mapped it: the one moment a segment's name
 * outlives its creator. */
static void* die_once_shared(void* unused) {
  (void)unused;
  char mine[64];
  snprintf(mine, sizeof mine, "tutti-%d-", (int)getpid());
  for (int tries = 0; tries < 4000; ++tries) {
    DIR* dir = opendir("/dev/shm");
    struct dirent* entry;
    int found = 0;
    while (dir != NULL && !found && (entry = readdir(dir)) != NULL) found = !strncmp(entry->d_name, mine, strlen(mine));
    if (found) {
      printf("coll_shared_memory: rank 0 dies with /dev/shm/%s\n", entry->d_name);
      fflush(stdout);
      raise(SIGKILL);
    }
    if (dir != NULL) closedir(dir);
    usleep(5000);
  }
  printf("FAIL rank 0 shared_memory: no segment of this process appeared in /dev/shm\n");
  fflush(stdout);
  _exit(1);
}

static void abandon(tutti_comm* world) {
  /* The communicator's own segment is unlinked by now: only the next one counts. */
  if (!ok(tutti_barrier(world, NULL), "tutti_barrier")) return;
  if (world_rank != 0) {
    sleep(30);
    return;
  }
  printf("coll_shared_memory: rank 0 is pid %d\n", (int)getpid());
  fflush(stdout);
  pthread_t killer;
  pthread_create(&killer, NULL, die_once_shared, NULL);
  void* memory = NULL;
  tutti_mem_alloc(world, 1 << 20, &memory);
  fail("tutti_mem_alloc returned although rank 1 never called it");
}

int main(int argc, char** argv) {
  tutti_comm* world = NULL;
  if (tutti_comm_init(NULL, &world) != TUTTI_OK) {
    printf("FAIL rank ? shared_memory: tutti_comm_init: %s\n", tutti_last_error());
    return 1;
  }
  int32_t size = 1;
  tutti_comm_rank(world, &world_rank);
  tutti_comm_size(world, &size);
  if (argc > 1 && strcmp(argv[1], "sizes") == 0) {
    bad_sizes(world, size);
  } else if (argc > 1 && strcmp(argv[1], "abandon") == 0) {
    abandon(world);
  } else {
    exercise(world, "world");
    tutti_comm* half = NULL;
    if (ok(tutti_comm_split(world, world_rank % 2, world_rank, &half), "tutti_comm_split")) {
      exercise(half, world_rank % 2 ? "odd" : "even");
      exercise(world, "world again");
      tutti_comm_destroy(half);
    }
  }
  printf("coll_shared_memory: rank %d, %d checks, %d failures\n", world_rank, checks, failures);
  fflush(stdout);
  tutti_comm_destroy(world);
  return failures > 0;
}
