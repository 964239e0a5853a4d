// A POSIX shared-memory segment mapped into this process, and the rendezvous that
// shares one among the ranks of a group. Rank 0 creates "/tutti-<pid>-<pid
// namespace>-<random>" and reserves its pages (so a full /dev/shm is an error here,
// not a SIGBUS later), publishes the name in the store, and unlinks it once every rank
// has mapped it, or as soon as that fails: the memory goes when the last rank unmaps
// it, however the ranks end. Only a rank 0 killed in between leaves the name behind;
// the next rank 0 on the node removes it (remove_abandoned_segments), and so does
// `tutti launch` when its job ends. The memory starts as zeros (rank 0's first bytes,
// its stamp for the others to check, once share returns there).
//
// A rank that fails on the way (cannot create, open or map the segment, or was given
// other bytes) writes its error where the others wait for it, and rank 0 then writes
// its verdict, which every rank waits for: all ranks come out of share with the same
// outcome, at once, rather than some waiting out their deadline.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/store/client.h"

namespace tutti::transport::shm {

// When a rank's mapping of a segment gets its page-table entries: all at once (every
// page read once before share returns, so that no collective later waits on a first
// touch), or each as the collectives first use its page (only the pages used cost
// anything). The callers choose, since only they know how much of the segment will be
// used (segment.cc says what a first touch costs).
enum class Mapping { kAtOnce, kAsUsed };

class Segment {
 public:
  // Collective over `size` ranks; keys under `prefix` ("<prefix>name",
  // "<prefix>mapped/<rank>", "<prefix>verdict"). Every rank passes the same `bytes`;
  // given other bytes than rank 0's, every rank fails with kTransport and
  // `size_remedy` (what makes them agree). Throws, on every rank alike, kTransport
  // naming the segment and the errno when it cannot be created or mapped, kTimeout
  // naming the ranks that did not map it in time.
  static Segment share(store::Client& store, const std::string& prefix, int rank, int size, size_t bytes,
                       Mapping mapping, const char* size_remedy, Deadline deadline);
  // For a rank that cannot take part in share (its own arguments are wrong): tells the
  // others under the same keys, so that they fail at once with `error` too, and throws
  // it.
  [[noreturn]] static void refuse(store::Client& store, const std::string& prefix, int rank, const Error& error,
                                  Deadline deadline);

  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&&) = delete;
  Segment(const Segment&) = delete;
  ~Segment();

  unsigned char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  Segment(std::string name, unsigned char* base, size_t bytes) : name_(std::move(name)), base_(base), bytes_(bytes) {}
  static Segment lead(store::Client& store, const std::string& prefix, int size, size_t bytes, Mapping mapping,
                      Deadline deadline);
  static Segment follow(store::Client& store, const std::string& prefix, int rank, size_t bytes, Mapping mapping,
                        const char* size_remedy, Deadline deadline);
  static Segment create(const std::string& name, size_t bytes, Mapping mapping);
  static Segment open(const std::string& name, size_t bytes, Mapping mapping, const char* size_remedy);

  std::string name_;
  unsigned char* base_;
  size_t bytes_;
};

// Unlinks the segments in /dev/shm that a rank 0 of this user and pid namespace
// created and could not unlink because it died first (its pid is gone); returns how
// many. A segment whose pid lives on, or is another user's, or of a name tutti does
// not make, is never touched. Safe at any time: ranks that mapped a segment keep it.
size_t remove_abandoned_segments();

}  // namespace tutti::transport::shm
