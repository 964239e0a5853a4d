// The choice between two sets of reduction kernels: AVX2 (with F16C; the 16- and 8-bit
// floats eight at a time), or portable: x86-64's baseline, SSE2, for the dtypes combined as
// stored, and one value at a time through half.cc and float8.cc for the 16- and 8-bit
// floats. Both give bitwise the same results, but for which NaN a result of two NaNs
// is. Internal to runtime/collectives/ and its tests.
#pragma once

namespace tutti {

enum class Kernels { kPortable, kAvx2 };

// Makes later reductions use `kernels`. Returns false, changing nothing, when this CPU
// lacks AVX2 or F16C. A process starts with the fastest its CPU has; tests switch so
// that both are checked on a machine that has both.
bool use_kernels(Kernels kernels);

}  // namespace tutti
