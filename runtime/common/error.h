// tutti::Error is how the runtime reports failure: a status and a message that says
// what, where and how to fix it (STYLE G15). Only capi/ catches it and turns it into
// a status and tutti_last_error().
#pragma once

#include <stdexcept>
#include <string>

#include "runtime/common/status.h"

namespace tutti {

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

[[noreturn]] inline void fail(Status status, const std::string& message) { throw Error(status, message); }

}  // namespace tutti
