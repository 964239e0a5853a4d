// tutti/error.hpp: tutti's statuses as C++ exceptions.
//
// Every wrapper call that fails throws tutti::Error, or the subclass of its status that
// a caller is likely to handle on its own (a timeout, a lost peer, ranks that disagree,
// an abort). what() is tutti_last_error()'s message, read at once, before another call
// can replace it: what went wrong, where, and how to fix it.
#ifndef TUTTI_CPP_ERROR_HPP
#define TUTTI_CPP_ERROR_HPP

#include <stdexcept>
#include <string>

#include "tutti.h"

namespace tutti {

class Error : public std::runtime_error {
 public:
  Error(tutti_status status, const std::string& message) : std::runtime_error(message), status_(status) {}

  tutti_status status() const noexcept { return status_; }
  // "TUTTI_ERR_TIMEOUT" and so on.
  const char* name() const noexcept { return tutti_status_name(status_); }

 private:
  tutti_status status_;
};

class InvalidArgumentError : public Error {
  using Error::Error;
};
class TimeoutError : public Error {
  using Error::Error;
};
class PeerLostError : public Error {
  using Error::Error;
};
class MismatchError : public Error {
  using Error::Error;
};
class AbortedError : public Error {
  using Error::Error;
};

// Throws the exception of status, which must not be TUTTI_OK, with message.
[[noreturn]] inline void throw_error(tutti_status status, const std::string& message) {
  switch (status) {
    case TUTTI_ERR_INVALID_ARGUMENT: throw InvalidArgumentError(status, message);
    case TUTTI_ERR_TIMEOUT: throw TimeoutError(status, message);
    case TUTTI_ERR_PEER_LOST: throw PeerLostError(status, message);
    case TUTTI_ERR_MISMATCH: throw MismatchError(status, message);
    case TUTTI_ERR_ABORTED: throw AbortedError(status, message);
    default: throw Error(status, message);
  }
}

// Returns if status is TUTTI_OK, else throws its exception with this thread's
// tutti_last_error() (the status's own message if that is empty). For the result of a
// C call made by hand: tutti::check(tutti_comm_dump(comm.get(), 2)).
inline void check(tutti_status status) {
  if (status == TUTTI_OK) return;
  const char* message = tutti_last_error();
  throw_error(status, *message != '\0' ? message : tutti_status_string(status));
}

}  // namespace tutti

#endif  // TUTTI_CPP_ERROR_HPP
