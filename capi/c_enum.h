// The int a C caller passed for an enum parameter of tutti.h. In C an enum is an
// integer, and any value can come through it (a typo, (tutti_dtype)99, ctypes and
// LuaJIT's FFI passing plain ints); in C++ reading an enum object whose value lies
// outside its enumerators' range is undefined behaviour (UBSan: "load of value 7,
// which is not a valid value for type 'tutti_memory'"). So a shim reads the argument's
// bytes as an int, and checks and converts that int, never the enum itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace tutti::capi {

template <typename Enum>
int32_t c_enum_value(const Enum& argument) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int32_t), "a tutti.h enum is an int");
  int32_t value;
  std::memcpy(&value, &argument, sizeof value);
  return value;
}

}  // namespace tutti::capi
