// Libraries opened at run time (dlopen) rather than linked, so that libtutti.so loads
// without them and a process pays for them only on the path that uses them: the CUDA
// runtime and NCCL (device/nccl/), PMIx (rendezvous/pmix_exchange.cc).
#pragma once

#include <dlfcn.h>

#include <string>

#include "runtime/common/concat.h"

namespace tutti {

// Sets *slot to `library`'s symbol `name`. Where it has none, sets *why_not to
// "<library_name> has no <name> (<hint>)" and returns false.
template <typename Fn>
bool bind_symbol(void* library, const std::string& library_name, const char* name, const char* hint, Fn* slot,
                 std::string* why_not) {
  *slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (*slot == nullptr) *why_not = concat(library_name, " has no ", name, " (", hint, ")");
  return *slot != nullptr;
}

}  // namespace tutti
