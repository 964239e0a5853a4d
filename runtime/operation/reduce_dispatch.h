// The choice between the two kernels for 16-bit floats (float16, bfloat16): F16C/AVX2,
// eight values at a time, or portable, one value at a time through half.cc. Both give
// bitwise the same results. Internal to runtime/collectives/ and its tests.
#pragma once

namespace tutti {

enum class HalfKernels { kPortable, kF16cAvx2 };

// Makes later reductions of 16-bit floats use `kernels`. Returns false, changing
// nothing, when this CPU lacks F16C/AVX2. A process starts with the fastest its CPU
// has; tests switch so that both are checked on a machine that has both.
bool use_half_kernels(HalfKernels kernels);

}  // namespace tutti
