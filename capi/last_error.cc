#include "capi/last_error.h"

namespace tutti::capi {
namespace {

thread_local std::string last_error_text;

}  // namespace

void set_last_error(const std::string& message) {
  try {
    last_error_text = message;
  } catch (...) {
    // No memory for the message: keep the status, lose the detail.
    last_error_text.clear();
  }
}

const char* last_error() { return last_error_text.c_str(); }

}  // namespace tutti::capi
