// The float32 fields that the narrow-float conversions (half.cc, float8.cc) take apart.
#pragma once

#include <cstdint>

namespace tutti {

constexpr uint32_t kFloatSignBit = 0x80000000;
constexpr uint32_t kFloatInf = 0x7f800000;  // the exponent field, all ones
constexpr uint32_t kFloatQuietBit = 0x00400000;

}  // namespace tutti
