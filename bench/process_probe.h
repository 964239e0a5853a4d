// What the store benchmarks (store_bench.cc, rendezvous_bench.cc) read of their server
// process, which runs in a child of its own so that its figures are its own, and the
// pipe they talk to it through.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace tutti::bench {

// A field of /proc/self/status in KiB ("VmHWM", "VmRSS"), or -1.
long status_kib(const char* field);
// utime + stime of this process, in seconds.
double cpu_seconds();
// How many descriptors process pid holds, or -1.
int count_fds(pid_t pid);
// Reads exactly size bytes; false at end of file or on error.
bool read_all(int fd, void* data, size_t size);
// Writes all size bytes, or as many as the pipe takes before it breaks.
void write_all(int fd, const void* data, size_t size);

}  // namespace tutti::bench
