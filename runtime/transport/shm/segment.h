// A POSIX shared-memory segment mapped into this process, and the rendezvous that
// shares one among the ranks of a group. Rank 0 creates "/tutti-<pid>-<random>" and
// reserves its pages (so a full /dev/shm is an error here, not a SIGBUS later),
// publishes the name in the store, and unlinks it once every rank has mapped it, or
// as soon as that fails: the name never outlives the rendezvous, and the memory goes
// when the last rank unmaps it, however the ranks end. The memory starts as zeros
// (rank 0's first bytes, its stamp for the others to check, once share returns there).
#pragma once

#include <cstddef>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/store/client.h"

namespace tutti::transport::shm {

class Segment {
 public:
  // Collective over `size` ranks; keys under `prefix` ("<prefix>name" and
  // "<prefix>mapped/<rank>"). Every rank passes the same `bytes`; a rank given other
  // bytes than rank 0 fails with kTransport and `size_remedy` (what makes them agree).
  // Throws kTransport naming the segment and the errno when it cannot be created or
  // mapped, kTimeout naming the ranks that did not map it in time.
  static Segment share(store::Client& store, const std::string& prefix, int rank, int size, size_t bytes,
                       const char* size_remedy, Deadline deadline);

  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&&) = delete;
  Segment(const Segment&) = delete;
  ~Segment();

  unsigned char* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  Segment(std::string name, unsigned char* base, size_t bytes) : name_(std::move(name)), base_(base), bytes_(bytes) {}
  static Segment create(const std::string& name, size_t bytes);
  static Segment open(const std::string& name, size_t bytes, const char* size_remedy);

  std::string name_;
  unsigned char* base_;
  size_t bytes_;
};

}  // namespace tutti::transport::shm
