/* A stand-in libtutti of ABI major 1, for the test that the Python package refuses a
 * library of another major version (test_library.py). It exports only what the
 * package reads before refusing it. */
#include <stdint.h>

__attribute__((visibility("default"))) uint32_t tutti_version(void) { return (1u << 16) | (2u << 8) | 3u; /* 1.2.3 */ }
