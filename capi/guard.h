// Every exported function runs its body through guarded(): it is the one place where
// C++ exceptions become a status and a thread-local message, so none crosses the ABI.
#pragma once

#include <new>
#include <string>

#include "capi/last_error.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "tutti.h"

namespace tutti::capi {

inline tutti_status fail_with(tutti_status status, const std::string& message) {
  set_last_error(message);
  return status;
}

inline tutti_status invalid_argument(const char* api, const std::string& what_and_fix) {
  return fail_with(TUTTI_ERR_INVALID_ARGUMENT, concat(api, ": ", what_and_fix));
}

template <typename Body>
tutti_status guarded(const char* api, Body&& body) noexcept {
  try {
    body();
    return TUTTI_OK;
  } catch (const Error& error) {
    return fail_with(static_cast<tutti_status>(error.status()), error.what());
  } catch (const std::bad_alloc&) {
    return fail_with(TUTTI_ERR_NO_MEMORY, concat(api, ": out of memory"));
  } catch (const std::exception& error) {
    return fail_with(TUTTI_ERR_INTERNAL, concat("internal error in ", api, ": ", error.what(), "; please report it"));
  } catch (...) {
    return fail_with(TUTTI_ERR_INTERNAL, concat("internal error in ", api, ": unknown exception; please report it"));
  }
}

}  // namespace tutti::capi
