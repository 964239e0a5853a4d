/* coll_all_to_allv: tutti_all_to_allv checked byte by byte, for test_all_to_allv.c.
 *
 *   coll_all_to_allv --case values [--scale N]
 *       Rounds of all_to_allv in which rank i sends rank j a block of
 *       count(i, j, round) elements, many of them 0, scaled by N (default 1; the test
 *       also runs blocks past 64 KiB, where the selector picks the pairwise algorithm):
 *       each of element sizes 1, 2, 4 and 8 (uint8, bfloat16, float32, int64), and
 *         - packed blocks (NULL offsets);
 *         - blocks placed in reverse rank order with gaps between them, whose bytes
 *           must stay untouched, and send blocks that several peers read;
 *         - asynchronous, with the count and offset arrays overwritten as soon as the
 *           call returns (the operation keeps copies).
 *       Every received byte is compared with the pattern its sender wrote, every byte
 *       outside the blocks with its guard, and the send buffer must be unchanged.
 *   coll_all_to_allv --case mismatch
 *       the last rank sends rank 0 one element more than rank 0 expects. Rank 0 must
 *       fail with TUTTI_ERR_MISMATCH naming the last rank and the size it expected; every rank
 *       prints "MISMATCH rank R status=S message=\"...\"", then all wait out the
 *       operation timeout plus a second, so that none sees another leave.
 *
 * Prints "FAIL rank R ..." for each failed check and
 * "coll_all_to_allv: rank R ran C cases, F failures"; exits 1 if F > 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

static tutti_comm* comm;
static int rank, size;
static long cases, failures;

__attribute__((format(printf, 1, 2))) static void fail(const char* format, ...) {
  char what[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  printf("FAIL rank %d %s\n", rank, what);
  ++failures;
}

/* How many elements rank `from` sends rank `to` in a round: 0 to 4 times scale, a
 * quarter of the blocks empty, and not symmetric (from -> to differs from to -> from). */
static size_t count_of(int from, int to, int round, size_t scale) {
  return (size_t)((from * 7 + to * 3 + round * 5 + from * to) % 5) * scale;
}

/* The byte that `from` writes at byte i of its block for `to`. */
static unsigned char pattern(int from, int to, int round, size_t i) {
  return (unsigned char)(from * 31 + to * 17 + round * 13 + i * 7 + (i >> 8) * 3 + 1);
}

#define GUARD 0xA5
#define GAP 3 /* elements between placed blocks */

typedef enum { PACKED, PLACED, ASYNC } form;
static const char* const form_names[] = {"packed", "placed", "async"};

/* In the placed form, the peer whose send block rank `from` sends to `to`: blocks of
 * equal counts for two other peers are one block, which both read. */
static int owner_of(int from, int to, int round, size_t scale) {
  if (to == from) return to;
  for (int other = to + 1; other < size; ++other) {
    if (other != from && count_of(from, other, round, scale) == count_of(from, to, round, scale)) {
      return owner_of(from, other, round, scale);
    }
  }
  return to;
}

/* Counts and offsets of one rank's side of a round. */
typedef struct layout {
  size_t *send_counts, *send_offsets, *recv_counts, *recv_offsets;
  size_t send_total, recv_total; /* elements, gaps included */
} layout;

static layout make_layout(int round, size_t scale, form f) {
  layout l;
  l.send_counts = calloc((size_t)size, sizeof(size_t));
  l.send_offsets = calloc((size_t)size, sizeof(size_t));
  l.recv_counts = calloc((size_t)size, sizeof(size_t));
  l.recv_offsets = calloc((size_t)size, sizeof(size_t));
  l.send_total = l.recv_total = 0;
  for (int peer = 0; peer < size; ++peer) {
    l.send_counts[peer] = count_of(rank, peer, round, scale);
    l.recv_counts[peer] = count_of(peer, rank, round, scale);
  }
  if (f != PLACED) {
    for (int peer = 0; peer < size; ++peer) {
      l.send_offsets[peer] = l.send_total;
      l.recv_offsets[peer] = l.recv_total;
      l.send_total += l.send_counts[peer];
      l.recv_total += l.recv_counts[peer];
    }
    return l;
  }
  /* Reverse rank order, GAP elements before each block and after the last. */
  for (int peer = size - 1; peer >= 0; --peer) {
    l.recv_offsets[peer] = l.recv_total + GAP;
    l.recv_total += l.recv_counts[peer] + GAP;
    int owner = owner_of(rank, peer, round, scale);
    if (owner != peer) {
      l.send_offsets[peer] = l.send_offsets[owner];
    } else {
      l.send_offsets[peer] = l.send_total + GAP;
      l.send_total += l.send_counts[peer] + GAP;
    }
  }
  l.send_total += GAP;
  l.recv_total += GAP;
  return l;
}

static void free_layout(layout* l) {
  free(l->send_counts);
  free(l->send_offsets);
  free(l->recv_counts);
  free(l->recv_offsets);
}

/* One all_to_allv of `element`-byte elements in form f, checked. */
static void run_case(tutti_dtype dtype, size_t element, int round, size_t scale, form f) {
  ++cases;
  char label[128];
  snprintf(label, sizeof label, "element %zu round %d scale %zu %s", element, round, scale, form_names[f]);
  layout l = make_layout(round, scale, f);
  size_t send_bytes = l.send_total * element, recv_bytes = l.recv_total * element;
  /* One guard byte past each end, and the blocks' pattern, where the block's owner
   * names it (two peers reading one block read the same bytes). */
  unsigned char* send = malloc(send_bytes + 1);
  unsigned char* recv = malloc(recv_bytes + 1);
  memset(send, GUARD, send_bytes + 1);
  memset(recv, GUARD, recv_bytes + 1);
  for (int peer = 0; peer < size; ++peer) {
    int owner = f == PLACED ? owner_of(rank, peer, round, scale) : peer;
    for (size_t i = 0; i < l.send_counts[peer] * element; ++i) {
      send[l.send_offsets[peer] * element + i] = pattern(rank, owner, round, i);
    }
  }
  unsigned char* sent = malloc(send_bytes + 1);
  memcpy(sent, send, send_bytes + 1);

  tutti_status status;
  if (f == ASYNC) {
    tutti_work* work = NULL;
    status =
        tutti_all_to_allv(comm, send, l.send_counts, l.send_offsets, recv, l.recv_counts, l.recv_offsets, dtype, &work);
    /* The operation must have kept copies of the arrays. */
    layout saved = make_layout(round, scale, f);
    for (int peer = 0; peer < size; ++peer) {
      l.send_counts[peer] = l.recv_counts[peer] = 7777;
      l.send_offsets[peer] = l.recv_offsets[peer] = 99999;
    }
    if (status == TUTTI_OK) status = tutti_work_wait(work, -1);
    tutti_work_release(work);
    free_layout(&l);
    l = saved;
  } else {
    status = tutti_all_to_allv(comm, send, l.send_counts, f == PACKED ? NULL : l.send_offsets, recv, l.recv_counts,
                               f == PACKED ? NULL : l.recv_offsets, dtype, NULL);
  }
  if (status != TUTTI_OK) {
    fail("%s: %s: %s", label, tutti_status_name(status), tutti_last_error());
  } else {
    /* Every byte: inside a block, its sender's pattern; elsewhere, the guard. */
    unsigned char* expected = malloc(recv_bytes + 1);
    memset(expected, GUARD, recv_bytes + 1);
    for (int peer = 0; peer < size; ++peer) {
      int owner = f == PLACED ? owner_of(peer, rank, round, scale) : rank;
      for (size_t i = 0; i < l.recv_counts[peer] * element; ++i) {
        expected[l.recv_offsets[peer] * element + i] = pattern(peer, owner, round, i);
      }
    }
    size_t wrong = 0, first = 0;
    for (size_t at = 0; at <= recv_bytes; ++at) {
      if (recv[at] != expected[at] && wrong++ == 0) first = at;
    }
    if (wrong > 0) {
      fail("%s: %zu of %zu bytes wrong, the first at byte %zu (got 0x%02x, want 0x%02x)", label, wrong, recv_bytes + 1,
           first, recv[first], expected[first]);
    }
    free(expected);
  }
  if (memcmp(send, sent, send_bytes + 1) != 0) fail("%s: the send buffer was written", label);
  free(sent);
  free(send);
  free(recv);
  free_layout(&l);
}

static void case_values(size_t scale) {
  static const tutti_dtype dtypes[] = {TUTTI_DTYPE_UINT8, TUTTI_DTYPE_BFLOAT16, TUTTI_DTYPE_FLOAT32, TUTTI_DTYPE_INT64};
  static const size_t elements[] = {1, 2, 4, 8};
  for (int round = 0; round < 3; ++round) {
    for (int d = 0; d < 4; ++d) {
      for (int f = PACKED; f <= ASYNC; ++f) run_case(dtypes[d], elements[d], round, scale, (form)f);
    }
  }
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void case_mismatch(void) {
  ++cases;
  enum { N = 5 };
  size_t* send_counts = calloc((size_t)size, sizeof(size_t));
  size_t* recv_counts = calloc((size_t)size, sizeof(size_t));
  for (int peer = 0; peer < size; ++peer) send_counts[peer] = recv_counts[peer] = N;
  if (rank == size - 1) send_counts[0] = N + 1;
  int32_t* send = calloc((size_t)size * (N + 1), sizeof(int32_t));
  int32_t* recv = calloc((size_t)size * N, sizeof(int32_t));
  long long started = now_ms();
  tutti_status status =
      tutti_all_to_allv(comm, send, send_counts, NULL, recv, recv_counts, NULL, TUTTI_DTYPE_INT32, NULL);
  const char* message = status == TUTTI_OK ? "" : tutti_last_error();
  printf("MISMATCH rank %d status=%s elapsed_ms=%lld message=\"%s\"\n", rank, tutti_status_name(status),
         now_ms() - started, message);
  if (rank == 0) {
    char peer[32];
    snprintf(peer, sizeof peer, "rank %d", size - 1);
    if (status != TUTTI_ERR_MISMATCH) {
      fail("mismatch: rank 0 got %s, want TUTTI_ERR_MISMATCH", tutti_status_name(status));
    } else if (strstr(message, peer) == NULL || strstr(message, "20 bytes") == NULL) {
      fail("mismatch: the message names neither %s nor the 20 bytes expected: \"%s\"", peer, message);
    }
  }
  const char* timeout = getenv("TUTTI_OP_TIMEOUT_MS");
  long long stay_ms = (timeout ? atoll(timeout) : 0) + 1000;
  struct timespec pause = {stay_ms / 1000, (stay_ms % 1000) * 1000000};
  nanosleep(&pause, NULL);
  free(send);
  free(recv);
  free(send_counts);
  free(recv_counts);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* case_name = "";
  size_t scale = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--case") == 0) case_name = argv[i + 1];
    if (strcmp(argv[i], "--scale") == 0) scale = (size_t)strtoull(argv[i + 1], NULL, 10);
  }
  if (strcmp(case_name, "values") != 0 && strcmp(case_name, "mismatch") != 0) {
    fprintf(stderr, "usage: coll_all_to_allv --case values [--scale N] | --case mismatch\n");
    return 2;
  }
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  tutti_status status = tutti_comm_init(&config, &comm);
  if (status != TUTTI_OK) {
    printf("FAIL rank ? init: %s: %s\n", tutti_status_name(status), tutti_last_error());
    return 1;
  }
  tutti_comm_rank(comm, &rank);
  tutti_comm_size(comm, &size);
  if (strcmp(case_name, "values") == 0) {
    case_values(scale);
  } else {
    case_mismatch();
  }
  printf("coll_all_to_allv: rank %d ran %ld cases, %ld failures\n", rank, cases, failures);
  tutti_comm_destroy(comm);
  return failures > 0 ? 1 : 0;
}
