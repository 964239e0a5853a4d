// Versions, statuses and the last error: the calls that need no communicator.
#include <string_view>

#include "capi/c_enum.h"
#include "capi/last_error.h"
#include "runtime/common/status.h"
#include "tutti.h"

// The runtime's statuses must be the header's, value for value.
#define TUTTI_CHECK_STATUS(name, value, message) \
  static_assert((value) == TUTTI_##name, "TUTTI_STATUS_MAP and its own values disagree");
TUTTI_STATUS_MAP(TUTTI_CHECK_STATUS)
#undef TUTTI_CHECK_STATUS
static_assert(static_cast<int>(tutti::Status::kInternal) == TUTTI_ERR_INTERNAL &&
                  static_cast<int>(tutti::Status::kDenied) == TUTTI_ERR_DENIED &&
                  static_cast<int>(tutti::Status::kTimeout) == TUTTI_ERR_TIMEOUT &&
                  static_cast<int>(tutti::Status::kPeerLost) == TUTTI_ERR_PEER_LOST &&
                  static_cast<int>(tutti::Status::kMismatch) == TUTTI_ERR_MISMATCH &&
                  static_cast<int>(tutti::Status::kAborted) == TUTTI_ERR_ABORTED &&
                  static_cast<int>(tutti::Status::kTransport) == TUTTI_ERR_TRANSPORT &&
                  static_cast<int>(tutti::Status::kUnsupported) == TUTTI_ERR_UNSUPPORTED &&
                  static_cast<int>(tutti::Status::kNoMemory) == TUTTI_ERR_NO_MEMORY &&
                  static_cast<int>(tutti::Status::kInvalidArgument) == TUTTI_ERR_INVALID_ARGUMENT,
              "runtime/common/status.h and tutti.h disagree");
// And the runtime's names for them, which its own reports use, the header's names.
constexpr bool same_name(tutti::Status status, std::string_view header_name) {
  if (header_name.starts_with("ERR_")) header_name.remove_prefix(4);
  return header_name == tutti::status_word(status);
}
#define TUTTI_CHECK_STATUS_NAME(name, value, message) \
  static_assert(same_name(static_cast<tutti::Status>(value), #name), "status_word and TUTTI_STATUS_MAP disagree");
TUTTI_STATUS_MAP(TUTTI_CHECK_STATUS_NAME)
#undef TUTTI_CHECK_STATUS_NAME

#define TUTTI_STRINGIFY_VALUE(x) #x
#define TUTTI_STRINGIFY(x) TUTTI_STRINGIFY_VALUE(x)

extern "C" {

TUTTI_API uint32_t tutti_version(void) { return TUTTI_VERSION_HEX; }

TUTTI_API const char* tutti_version_string(void) {
  return TUTTI_STRINGIFY(TUTTI_VERSION_MAJOR) "." TUTTI_STRINGIFY(TUTTI_VERSION_MINOR) "." TUTTI_STRINGIFY(
      TUTTI_VERSION_PATCH);
}

TUTTI_API const char* tutti_status_string(tutti_status status) {
  switch (tutti::capi::c_enum_value(status)) {
#define TUTTI_STATUS_STRING_CASE(name, value, message) \
  case TUTTI_##name: return message;
    TUTTI_STATUS_MAP(TUTTI_STATUS_STRING_CASE)
#undef TUTTI_STATUS_STRING_CASE
  }
  return "unknown status (not one of tutti.h's TUTTI_STATUS_MAP)";
}

TUTTI_API const char* tutti_status_name(tutti_status status) {
  switch (tutti::capi::c_enum_value(status)) {
#define TUTTI_STATUS_NAME_CASE(name, value, message) \
  case TUTTI_##name: return "TUTTI_" #name;
    TUTTI_STATUS_MAP(TUTTI_STATUS_NAME_CASE)
#undef TUTTI_STATUS_NAME_CASE
  }
  return "TUTTI_ERR_UNKNOWN";
}

TUTTI_API const char* tutti_last_error(void) { return tutti::capi::last_error(); }

}  // extern "C"
