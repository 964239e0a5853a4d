// The reduction kernels every algorithm shares: element-wise combine of buffers for
// each dtype x op. 16-bit floats (float16, bfloat16) and 8-bit floats (float8_e4m3,
// float8_e5m2) are widened to float32, combined, and rounded back to nearest even (fp8
// saturating); reduce_many accumulates all its sources in float32 (integers in their
// own type, wrapping on overflow as two's complement) and rounds once, which is why
// the one-pass shared-memory path is also the most exact.
//
// AVG: reduce_inplace and reduce_into treat it as SUM (the algorithm divides once at
// the end with finish_average); reduce_many divides by `average_over` itself when the
// op is AVG. Integer AVG truncates toward zero, as C's division does.
//
// Every function accepts count == 0 and does nothing; none allocates.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/operation/dtype.h"

namespace tutti {

// dst[i] = dst[i] op src[i]. dst and src may be the same buffer.
void reduce_inplace(void* dst, const void* src, size_t count, Dtype dtype, ReduceOp op);

// dst[i] = a[i] op b[i]. dst may be a or b.
void reduce_into(void* dst, const void* a, const void* b, size_t count, Dtype dtype, ReduceOp op);

// dst[i] = sources[0][i] op ... op sources[n-1][i], and / average_over for AVG.
// n >= 1; dst may be one of the sources. One pass over each source.
void reduce_many(void* dst, const void* const* sources, int n, size_t count, Dtype dtype, ReduceOp op,
                 int average_over);

// How reduce_many_to writes its targets: through the cache, or streaming
// (stream_store.h) where the results do not fit in the cache or other cores read them.
enum class Stores { kPlain, kStreaming };

// reduce_many into each of targets[0 .. target_count - 1], with the same results.
// Streaming, it folds a cache line at a time and stores the line into every target
// while it is in L1, so that reading the sources and writing the targets overlap
// instead of taking turns; with plain stores, a block of a few KiB at a time. A target
// may be one of the sources (the very same elements), as with reduce_many; no other
// overlap is allowed. Streaming stores are ordered (sfence) before it returns.
void reduce_many_to(void* const* targets, int target_count, const void* const* sources, int n, size_t count,
                    Dtype dtype, ReduceOp op, int average_over, Stores stores);

// dst[i] /= n, for AVG after a SUM; does nothing for the other ops.
void finish_average(void* dst, size_t count, Dtype dtype, ReduceOp op, int n);

// IEEE binary16 and bfloat16 <-> float32, round to nearest even (NaN stays NaN).
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

// The OCP 8-bit floats <-> float32 (float8.cc says how): round to nearest even,
// saturating at the largest finite value (448, 57344), infinity included; NaN stays NaN.
float float8_e4m3_to_float(uint8_t bits);
uint8_t float_to_float8_e4m3(float value);
float float8_e5m2_to_float(uint8_t bits);
uint8_t float_to_float8_e5m2(float value);

}  // namespace tutti
