// A run of n consecutive blocks of a buffer laid out in rank order, starting at block
// `first` and wrapping past the last rank to rank 0 (Bruck's all-gather, and the
// binomial gather and scatter at a root other than 0, move such runs). A run goes as
// one message, or as two when it wraps; sender and receiver cut it at the same block,
// so their messages pair up.
#pragma once

#include <algorithm>
#include <cstddef>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/exchange.h"

namespace tutti::collectives {

// How many of the run's blocks come before the wrap.
inline int blocks_before_wrap(int first, int n, int size) { return std::min(n, size - first); }

// The run in place in a buffer of x.size() blocks of block_bytes each.
inline void send_wrapped(Exchange& x, int peer, const void* base, size_t block_bytes, int first, int n) {
  int head = blocks_before_wrap(first, n, x.size());
  x.send(peer, byte_at(base, first * block_bytes), head * block_bytes);
  if (n > head) x.send(peer, base, (n - head) * block_bytes);
}
inline void recv_wrapped(Exchange& x, int peer, void* base, size_t block_bytes, int first, int n) {
  int head = blocks_before_wrap(first, n, x.size());
  x.recv(peer, byte_at(base, first * block_bytes), head * block_bytes);
  if (n > head) x.recv(peer, base, (n - head) * block_bytes);
}

// The run copied out contiguously (block `first` at offset 0), cut as the in-place
// form above would be, so that either form can talk to the other.
inline void send_run(Exchange& x, int peer, const void* run, size_t block_bytes, int first, int n) {
  int head = blocks_before_wrap(first, n, x.size());
  x.send(peer, run, head * block_bytes);
  if (n > head) x.send(peer, byte_at(run, head * block_bytes), (n - head) * block_bytes);
}
inline void recv_run(Exchange& x, int peer, void* run, size_t block_bytes, int first, int n) {
  int head = blocks_before_wrap(first, n, x.size());
  x.recv(peer, run, head * block_bytes);
  if (n > head) x.recv(peer, byte_at(run, head * block_bytes), (n - head) * block_bytes);
}

}  // namespace tutti::collectives
