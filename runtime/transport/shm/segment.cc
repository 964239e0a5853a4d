#include "runtime/transport/shm/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
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
    case EROFS: return "make /dev/shm writable for this user (it is normally mode 1777)";
    case EMFILE:
    case ENFILE: return "raise the open-file limit (ulimit -n)";
    case ENOENT:
      return "rank 0 removed it already: it gave up waiting for this rank, or /dev/shm is not shared between "
             "the ranks (separate containers?); check rank 0's error";
    default: return "check that /dev/shm is a writable tmpfs shared by all ranks of this node";
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

unsigned char* map(int fd, const std::string& name, size_t bytes, Mapping mapping) {
  // MAP_POPULATE maps every page now, so that no collective takes page faults later.
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_SHARED | (mapping == Mapping::kAtOnce ? MAP_POPULATE : 0), fd, 0);
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
  if (mapping == Mapping::kAtOnce) touch_every_page(static_cast<unsigned char*>(base), bytes);
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

// The inode of this process's pid namespace, which tells whose pids a segment's name
// holds: 0 where /proc cannot say, and then no segment is ever taken for abandoned.
uint64_t pid_namespace() {
  struct stat status {};
  return stat("/proc/self/ns/pid", &status) == 0 ? static_cast<uint64_t>(status.st_ino) : 0;
}

// "/tutti-<pid>-<pid namespace>-<random>": the creator's pid and namespace let a later
// rank 0 recognise the segment of a creator that died before it could unlink it
// (remove_abandoned_segments).
std::string fresh_name() {
  std::random_device device;
  uint64_t random = (static_cast<uint64_t>(device()) << 32) | device();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(random));
  return concat("/tutti-", getpid(), "-", pid_namespace(), "-", hex);
}

// Whether /dev/shm/<file> is a segment that fresh_name made in this pid namespace for
// a process that has ended, and that this user owns.
bool abandoned(int directory, const char* file, uint64_t namespace_id) {
  long long pid = 0;
  unsigned long long found_namespace = 0;
  char random[17];
  if (std::sscanf(file, "tutti-%lld-%llu-%16[0-9a-f]", &pid, &found_namespace, random) != 3) return false;
  // Exactly what fresh_name writes, nothing more or less.
  if (pid <= 0 || found_namespace != namespace_id || std::strlen(random) != 16 ||
      concat("tutti-", pid, "-", found_namespace, "-", random) != file) {
    return false;
  }
  struct stat status {};
  if (fstatat(directory, file, &status, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(status.st_mode) ||
      status.st_uid != geteuid()) {
    return false;
  }
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// What a rank that cannot go on with the rendezvous writes in its place ("!<status>
// newline <message>"), so that the others fail at once with its reason instead of
// waiting out their deadline. Segment names start with '/', never '!'.
std::string refusal(Status status, const std::string& message) {
  return concat("!", static_cast<int>(status), "\n", message);
}
bool is_refusal(const std::string& value) { return !value.empty() && value[0] == '!'; }
// The error a refusal carries, its message after `whose` ("rank 2 reports").
Error refused(const std::string& value, const std::string& whose) {
  size_t newline = value.find('\n');
  auto status = static_cast<Status>(std::atoi(value.substr(1, newline - 1).c_str()));
  return Error(status, concat(whose, ": ", newline == std::string::npos ? value.substr(1) : value.substr(newline + 1)));
}

}  // namespace

Segment::Segment(Segment&& other) noexcept : name_(std::move(other.name_)), base_(other.base_), bytes_(other.bytes_) {
  other.base_ = nullptr;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

Segment Segment::create(const std::string& name, size_t bytes, Mapping mapping) {
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
    base = map(fd, name, bytes, mapping);
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
  Stamp stamp{kMagic, bytes};
  std::memcpy(base, &stamp, sizeof stamp);
  return Segment(name, base, bytes);
}

Segment Segment::open(const std::string& name, size_t bytes, Mapping mapping, const char* size_remedy) {
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
  Segment segment(name, map(fd, name, bytes, mapping), bytes);
  Stamp stamp;
  std::memcpy(&stamp, segment.base(), sizeof stamp);
  if (stamp.magic != kMagic || stamp.bytes != bytes) {
    fail(Status::kTransport, concat(describe(name, bytes), " was made by another tutti build (stamp ", stamp.magic,
                                    "); run the same tutti build on every rank"));
  }
  return segment;
}

size_t remove_abandoned_segments() {
  uint64_t namespace_id = pid_namespace();
  if (namespace_id == 0) return 0;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  size_t removed = 0;
  while (dirent* entry = readdir(dir)) {
    if (!abandoned(dirfd(dir), entry->d_name, namespace_id)) continue;
    if (shm_unlink(concat("/", entry->d_name).c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

Segment Segment::share(store::Client& store, const std::string& prefix, int rank, int size, size_t bytes,
                       Mapping mapping, const char* size_remedy, Deadline deadline) {
  if (rank == 0) return lead(store, prefix, size, bytes, mapping, deadline);
  return follow(store, prefix, rank, bytes, mapping, size_remedy, deadline);
}

void Segment::refuse(store::Client& store, const std::string& prefix, int rank, const Error& error, Deadline deadline) {
  try {
    store.set(rank == 0 ? prefix + "name" : concat(prefix, "mapped/", rank), refusal(error.status(), error.what()),
              deadline);
    if (rank == 0) store.set(prefix + "verdict", refusal(error.status(), error.what()), deadline);
  } catch (const Error&) {
    // The others then wait out their deadline instead: still bounded.
  }
  throw error;
}

Segment Segment::follow(store::Client& store, const std::string& prefix, int rank, size_t bytes, Mapping mapping,
                        const char* size_remedy, Deadline deadline) {
  const std::string name_key = prefix + "name";
  std::string name;
  try {
    name = store.get(name_key, deadline);
  } catch (const Error& e) {
    if (e.status() != Status::kTimeout) throw;
    fail(Status::kTimeout,
         concat("rank 0 did not publish its shared-memory segment (", name_key,
                ") in time; check that rank 0 is running and reached the same communicator ", "setup"));
  }
  if (is_refusal(name)) throw refused(name, "rank 0 could not make the shared memory");
  std::optional<Segment> segment;
  try {
    segment.emplace(open(name, bytes, mapping, size_remedy));
  } catch (const Error& e) {
    refuse(store, prefix, rank, e, deadline);
  }
  // That this rank mapped it, and rank 0's word on whether every rank did (all ranks
  // come out of share alike), in one round trip.
  auto mapped = store.pipeline(deadline);
  size_t told = mapped->set(concat(prefix, "mapped/", rank), "1");
  size_t said = mapped->multi_get({prefix + "verdict"});
  std::string verdict;
  try {
    mapped->wait(said);
    mapped->wait(told);  // answered before the verdict: the store answers in order
    verdict = mapped->values(said).at(0);
  } catch (const Error& e) {
    if (e.status() != Status::kTimeout) throw;
    fail(Status::kTimeout, concat("rank 0 did not say in time whether every rank mapped ", describe(name, bytes), " (",
                                  prefix, "verdict); check that rank 0 is running"));
  }
  if (is_refusal(verdict)) throw refused(verdict, "the shared memory could not be set up");
  return std::move(*segment);
}

Segment Segment::lead(store::Client& store, const std::string& prefix, int size, size_t bytes, Mapping mapping,
                      Deadline deadline) {
  remove_abandoned_segments();
  std::optional<Segment> segment;
  try {
    segment.emplace(create(fresh_name(), bytes, mapping));
  } catch (const Error& e) {
    refuse(store, prefix, 0, e, deadline);
  }
  const std::string& name = segment->name();
  std::vector<std::string> keys;
  for (int r = 1; r < size; ++r) keys.push_back(concat(prefix, "mapped/", r));
  std::vector<std::string> mapped;
  try {
    auto published = store.pipeline(deadline);
    published->set(prefix + "name", name);
    size_t all_mapped = published->multi_get(keys);
    published->wait_all();
    mapped = published->values(all_mapped);
  } catch (const Error& e) {
    shm_unlink(name.c_str());
    if (e.status() != Status::kTimeout) throw;
    Error timeout(Status::kTimeout,
                  concat(absent_ranks(store, keys), " did not map ", describe(name, bytes),
                         " in time; check that they are running, on this node, and share its ", "/dev/shm"));
    refuse(store, prefix, 0, timeout, Deadline::after_ms(1000));
  }
  shm_unlink(name.c_str());
  for (size_t i = 0; i < mapped.size(); ++i) {
    if (!is_refusal(mapped[i])) continue;
    refuse(store, prefix, 0, refused(mapped[i], concat("rank ", i + 1, " reports")), deadline);
  }
  store.set(prefix + "verdict", "", deadline);
  // Every rank has checked the stamp: rank 0's first bytes read as zeros again, as tmpfs
  // made them (the start of rank 0's part of a tutti_mem_alloc region).
  std::memset(segment->base(), 0, sizeof(Stamp));
  return std::move(*segment);
}

}  // namespace tutti::transport::shm
