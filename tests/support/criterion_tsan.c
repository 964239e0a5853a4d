/* Lets Criterion start under ThreadSanitizer; linked into the tests only when
 * TUTTI_SANITIZE=thread (tests/CMakeLists.txt).
 *
 * Criterion's BoxFort maps each of its arenas (one at start, one per test) MAP_FIXED
 * at base = 32 TiB + (rand_r() & 0x3fffff) * 16 MiB, drawing again while the pages
 * there are in use, at most 10 times. ThreadSanitizer owns most of that window (its
 * shadow and meta memory, and the gaps it protects) and refuses a fixed mapping
 * outside its application ranges, so almost every draw is refused and the test dies
 * with "Could not initialize inheritable arena: Resource temporarily unavailable"
 * (Criterion issue 274; 95 runs in 100 here, and every test of a file must win).
 * This rand_r, for BoxFort's calls only, skips the draws that ThreadSanitizer would
 * refuse or that land on pages in use: the arena goes where BoxFort would have put it
 * on a lucky run. Every other caller (UCX draws with rand_r too) gets the C library's. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <sys/mman.h>

/* Whether a mapping asked for at `at` lands there: the sanitizer's mmap moves a hint
 * it would refuse as a fixed address, and the kernel moves one whose pages are in use. */
static int maps_at(uintptr_t at, size_t length) {
  void* probe = mmap((void*)at, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (probe == MAP_FAILED) return 0;
  munmap(probe, length);
  return probe == (void*)at;
}

__attribute__((visibility("default"))) int rand_r(unsigned* seed) {
  /* UCX draws from several threads: the one pointer is looked up atomically. */
  static int (*next)(unsigned*);
  int (*next_rand_r)(unsigned*) = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
  if (!next_rand_r) {
    next_rand_r = (int (*)(unsigned*))dlsym(RTLD_NEXT, "rand_r");
    __atomic_store_n(&next, next_rand_r, __ATOMIC_RELEASE);
  }
  int r = next_rand_r(seed);
  Dl_info caller, criterion;
  if (!dladdr(__builtin_return_address(0), &caller) || !dladdr((void*)criterion_initialize, &criterion) ||
      caller.dli_fbase != criterion.dli_fbase)
    return r;
  /* BoxFort's formula (src/arena.c, 64-bit); the probe is one step of 16 MiB, more
   * than an arena starts with. About 1 draw in 40 is kept. */
  const uintptr_t base = (uintptr_t)1 << 45, step = (uintptr_t)1 << 24;
  for (int draws = 0; draws < 100000 && !maps_at(base + (uintptr_t)(r & 0x3fffff) * step, step); ++draws) {
    r = next_rand_r(seed);
  }
  return r;
}
