#include "runtime/transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::transport::shm {
namespace {

// The first bytes of every segment, written by rank 0 before it publishes the name:
// a rank of another tutti build (another layout) refuses the segment instead of
// misreading it.
struct Stamp {
  uint64_t magic;
  uint64_t bytes;
};
constexpr uint64_t kMagic = 0x7475747469534801ull;  // "tuttiSH", layout version 1

std::string errno_text(int error) { return concat(std::strerror(error), " (errno ", error, ")"); }

std::string describe(const std::string& name, size_t bytes) {
  return concat("shared-memory segment ", name, " (", bytes >> 20, " MiB)");
}

// What to do about a failed shm_open, ftruncate, fallocate or mmap, by errno.
const char* remedy(int error) {
  switch (error) {
    case ENOSPC:
    case ENOMEM:
    case EFBIG:
      return "free space in /dev/shm (df -h /dev/shm) or make it larger (docker run --shm-size, or mount -o "
             "remount,size=... /dev/shm)";
    case EACCES:
    case EPERM:
    case EROFS:
      return "make /dev/shm writable for this user (it is normally mode 1777)";
    case EMFILE:
    case ENFILE:
      return "raise the open-file limit (ulimit -n)";
    case ENOENT:
      return "rank 0 removed it already: it gave up waiting for this rank, or /dev/shm is not shared between "
             "the ranks (separate containers?); check rank 0's error";
    default:
      return "check that /dev/shm is a writable tmpfs shared by all ranks of this node";
  }
}

[[noreturn]] void fail_errno(const char* what, const std::string& name, size_t bytes, int error) {
  fail(Status::kTransport,
       concat("cannot ", what, " ", describe(name, bytes), ": ", errno_text(error), "; ", remedy(error)));
}

// Reads one byte of every page. On a VM the hypervisor may map a page for the guest
// only at its first access through a new mapping, even one that MAP_POPULATE filled
// in: on this project's 2-core VM that costs 1.5-2.5 us a page, with no page fault the
// guest can see, in every process and for every mapping. Left to the collectives, a
// 2-rank broadcast of 64 bytes took 3 us a call until it had used each of its 256
// cells once (0.2 us after), and the first large collectives paid for the slots. Paid
// here, it is 5 ms per rank for a 2-rank group's 8 MiB; on bare metal, a fraction of it.
void touch_every_page(const unsigned char* base, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t offset = 0; offset < bytes; offset += page) {
    (void)*static_cast<const volatile unsigned char*>(base + offset);
  }
}

unsigned char* map(int fd, const std::string& name, size_t bytes) {
  // MAP_POPULATE maps every page now, so that no collective takes page faults later.
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    int error = errno;
    close(fd);
    if (error == ENOMEM) {
      fail(Status::kTransport, concat("cannot map ", describe(name, bytes), ": ", errno_text(error),
                                      "; this process is out of memory or address space (check ulimit -v)"));
    }
    fail_errno("map", name, bytes, error);
  }
  close(fd);
  touch_every_page(static_cast<unsigned char*>(base), bytes);
  return static_cast<unsigned char*>(base);
}

// "ranks 2, 5" (or "rank 2"): whose mapped/<rank> key is missing. Asked once more,
// briefly, since the deadline has passed when this is called.
std::string absent_ranks(store::Client& store, const std::vector<std::string>& keys) {
  std::vector<bool> present;
  try {
    present = store.check(keys, Deadline::after_ms(1000));
  } catch (const Error&) {
    return "some ranks (the store did not say which)";
  }
  std::string missing;
  int count = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (present[i]) continue;
    missing += concat(count++ == 0 ? "" : ", ", i + 1);
  }
  return concat(count == 1 ? "rank " : "ranks ", missing);
}

std::string fresh_name() {
  std::random_device device;
  uint64_t random = (static_cast<uint64_t>(device()) << 32) | device();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random));
  return concat("/tutti-", getpid(), "-", hex);
}

}  // namespace

Segment::Segment(Segment&& other) noexcept
    : name_(std::move(other.name_)), base_(other.base_), bytes_(other.bytes_) {
  other.base_ = nullptr;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

Segment Segment::create(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fail_errno("create", name, bytes, errno);
  // ftruncate only sets the size of a tmpfs file; posix_fallocate reserves its pages,
  // so that a /dev/shm too small fails here rather than with SIGBUS mid-collective.
  int error = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (error == 0) error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (error != 0) {
    close(fd);
    shm_unlink(name.c_str());
    fail_errno("reserve", name, bytes, error);
  }
  unsigned char* base;
  try {
    base = map(fd, name, bytes);
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
  Stamp stamp{kMagic, bytes};
  std::memcpy(base, &stamp, sizeof stamp);
  return Segment(name, base, bytes);
}

Segment Segment::open(const std::string& name, size_t bytes, const char* size_remedy) {
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) fail_errno("open", name, bytes, errno);
  struct stat status {};
  if (fstat(fd, &status) != 0) {
    int error = errno;
    close(fd);
    fail_errno("inspect", name, bytes, error);
  }
  if (static_cast<size_t>(status.st_size) != bytes) {
    close(fd);
    fail(Status::kTransport, concat(describe(name, bytes), " has ", status.st_size, " bytes, but this rank expects ",
                                    bytes, "; ", size_remedy));
  }
  Segment segment(name, map(fd, name, bytes), bytes);
  Stamp stamp;
  std::memcpy(&stamp, segment.base(), sizeof stamp);
  if (stamp.magic != kMagic || stamp.bytes != bytes) {
    fail(Status::kTransport, concat(describe(name, bytes), " was made by another tutti build (stamp ", stamp.magic,
                                    "); run the same tutti build on every rank"));
  }
  return segment;
}

Segment Segment::share(store::Client& store, const std::string& prefix, int rank, int size, size_t bytes,
                       const char* size_remedy, Deadline deadline) {
  const std::string name_key = prefix + "name";
  if (rank != 0) {
    std::string name;
    try {
      name = store.get(name_key, deadline);
    } catch (const Error& e) {
      if (e.status() != Status::kTimeout) throw;
      fail(Status::kTimeout, concat("rank 0 did not publish its shared-memory segment (", name_key,
                                    ") in time; check that rank 0 is running and reached the same communicator ",
                                    "setup"));
    }
    Segment segment = open(name, bytes, size_remedy);
    store.set(concat(prefix, "mapped/", rank), "1", deadline);
    return segment;
  }

  Segment segment = create(fresh_name(), bytes);
  std::vector<std::string> keys;
  for (int r = 1; r < size; ++r) keys.push_back(concat(prefix, "mapped/", r));
  try {
    store.set(name_key, segment.name(), deadline);
    store.wait_all(keys, deadline);
  } catch (const Error& e) {
    shm_unlink(segment.name().c_str());
    if (e.status() != Status::kTimeout) throw;
    fail(Status::kTimeout, concat(absent_ranks(store, keys), " did not map ",
                                  describe(segment.name(), bytes), " in time; check that they are running, on ",
                                  "this node, and share its /dev/shm"));
  }
  shm_unlink(segment.name().c_str());
  // Every rank has checked the stamp: rank 0's first bytes read as zeros again, as tmpfs
  // made them (the start of rank 0's part of a tutti_mem_alloc region).
  std::memset(segment.base(), 0, sizeof(Stamp));
  return segment;
}

}  // namespace tutti::transport::shm
