// The communicator calls of tutti.h.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "capi/config_options.h"
#include "capi/guard.h"
#include "capi/handle.h"

namespace tutti::capi {

void refuse_comm(const tutti_comm* handle, const char* api) {
  if (handle == nullptr) {
    invalid_argument(api, "comm is NULL; pass a communicator from tutti_comm_init or tutti_comm_split");
  } else if (handle->tag == tutti_comm::kLiveTag && handle->pending) {
    invalid_argument(api,
                     "comm is still joining the job (tutti_comm_init_start); call tutti_comm_init_wait until "
                     "it returns TUTTI_OK first");
  } else {
    invalid_argument(api, "comm is not a live tutti_comm (already destroyed?); pass one from tutti_comm_init");
  }
}

namespace {

tutti_status wrap_new_comm(std::unique_ptr<comm::Comm> impl, tutti_comm** out) {
  if (!impl) return TUTTI_OK;  // *out stays NULL: e.g. a split with TUTTI_UNDEFINED
  auto* handle = new tutti_comm();
  handle->impl = std::move(impl);
  *out = handle;
  return TUTTI_OK;
}

// The getters share one shape: check the handle and the out pointer, then read.
template <typename Read>
tutti_status read_place(const tutti_comm* handle, int32_t* out, const char* api, Read read) {
  comm::Comm* comm = live_comm(handle, api);
  if (comm == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (out == nullptr) return invalid_argument(api, "the output pointer is NULL; pass the address of an int32_t");
  *out = read(*comm);
  return TUTTI_OK;
}

}  // namespace
}  // namespace tutti::capi

using tutti::capi::guarded;
using tutti::capi::invalid_argument;
using tutti::capi::live_comm;
using tutti::capi::read_place;

extern "C" {

TUTTI_API tutti_status tutti_comm_init(const tutti_config* config, tutti_comm** out) {
  const char* api = "tutti_comm_init";
  if (out == nullptr) return invalid_argument(api, "out is NULL; pass the address of a tutti_comm*");
  *out = nullptr;
  return guarded(api, [&] {
    tutti::comm::Options options = tutti::capi::comm_options(config);
    tutti::capi::wrap_new_comm(tutti::comm::Comm::init(options), out);
  });
}

TUTTI_API tutti_status tutti_comm_rank(const tutti_comm* comm, int32_t* rank) {
  return read_place(comm, rank, "tutti_comm_rank", [](const tutti::comm::Comm& c) { return c.rank(); });
}

TUTTI_API tutti_status tutti_comm_size(const tutti_comm* comm, int32_t* size) {
  return read_place(comm, size, "tutti_comm_size", [](const tutti::comm::Comm& c) { return c.size(); });
}

TUTTI_API tutti_status tutti_comm_local_rank(const tutti_comm* comm, int32_t* local_rank) {
  return read_place(comm, local_rank, "tutti_comm_local_rank",
                    [](const tutti::comm::Comm& c) { return c.local_rank(); });
}

TUTTI_API tutti_status tutti_comm_local_size(const tutti_comm* comm, int32_t* local_size) {
  return read_place(comm, local_size, "tutti_comm_local_size",
                    [](const tutti::comm::Comm& c) { return c.local_size(); });
}

TUTTI_API tutti_status tutti_comm_node_rank(const tutti_comm* comm, int32_t* node_rank) {
  return read_place(comm, node_rank, "tutti_comm_node_rank", [](const tutti::comm::Comm& c) { return c.node_rank(); });
}

TUTTI_API tutti_status tutti_comm_split(tutti_comm* comm, int32_t color, int32_t key, tutti_comm** out) {
  const char* api = "tutti_comm_split";
  if (out == nullptr) return invalid_argument(api, "out is NULL; pass the address of a tutti_comm*");
  *out = nullptr;
  tutti::comm::Comm* parent = live_comm(comm, api);
  if (parent == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  return guarded(api, [&] { tutti::capi::wrap_new_comm(parent->split(color, key), out); });
}

TUTTI_API tutti_status tutti_comm_shrink(tutti_comm* comm, tutti_comm** survivors) {
  const char* api = "tutti_comm_shrink";
  if (survivors == nullptr) return invalid_argument(api, "survivors is NULL; pass the address of a tutti_comm*");
  *survivors = nullptr;
  tutti::comm::Comm* parent = live_comm(comm, api);
  if (parent == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  return guarded(api, [&] { tutti::capi::wrap_new_comm(parent->shrink(), survivors); });
}

TUTTI_API tutti_status tutti_comm_grow(tutti_comm* comm, int32_t count, tutti_comm** grown) {
  const char* api = "tutti_comm_grow";
  if (grown == nullptr) return invalid_argument(api, "grown is NULL; pass the address of a tutti_comm*");
  *grown = nullptr;
  tutti::comm::Comm* parent = live_comm(comm, api);
  if (parent == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  return guarded(api, [&] { tutti::capi::wrap_new_comm(parent->grow(count), grown); });
}

TUTTI_API tutti_status tutti_comm_join(const tutti_config* config, tutti_comm** out) {
  const char* api = "tutti_comm_join";
  if (out == nullptr) return invalid_argument(api, "out is NULL; pass the address of a tutti_comm*");
  *out = nullptr;
  return guarded(api, [&] {
    tutti::comm::Options options = tutti::capi::comm_options(config, api);
    if (options.request.rank != -1 || options.request.world_size != -1) {
      tutti::fail(
          tutti::Status::kInvalidArgument,
          tutti::concat(api, ": config.rank is ", options.request.rank, " and config.world_size ",
                        options.request.world_size, "; leave both -1: the grow that admits this process decides them"));
    }
    tutti::capi::wrap_new_comm(tutti::comm::Comm::join(options), out);
  });
}

TUTTI_API tutti_status tutti_comm_dump(const tutti_comm* comm, int fd) {
  const char* api = "tutti_comm_dump";
  const tutti::comm::Comm* impl = live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (fd < 0) return invalid_argument(api, "fd is negative; pass an open file descriptor, such as 2 for stderr");
  return guarded(api, [&] {
    std::string text = impl->dump();
    for (size_t written = 0; written < text.size();) {
      ssize_t n = ::write(fd, text.data() + written, text.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        tutti::fail(tutti::Status::kTransport,
                    tutti::concat(api, ": cannot write to fd ", fd, ": ", n < 0 ? strerror(errno) : "nothing written"));
      }
      written += static_cast<size_t>(n);
    }
  });
}

TUTTI_API tutti_status tutti_comm_set_op_timeout(tutti_comm* comm, int64_t op_timeout_ms) {
  const char* api = "tutti_comm_set_op_timeout";
  tutti::comm::Comm* impl = live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (op_timeout_ms < 1 || op_timeout_ms > tutti::capi::kMaxTimeoutMs) {
    return invalid_argument(api,
                            tutti::concat("op_timeout_ms is ", op_timeout_ms, " on ", impl->describe(),
                                          "; give a number of milliseconds in [1, ", tutti::capi::kMaxTimeoutMs, "]"));
  }
  impl->set_op_timeout(op_timeout_ms);
  return TUTTI_OK;
}

TUTTI_API tutti_status tutti_comm_abort(tutti_comm* comm) {
  const char* api = "tutti_comm_abort";
  if (comm == nullptr || comm->tag != tutti_comm::kLiveTag) {
    tutti::capi::refuse_comm(comm, api);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  std::lock_guard<std::mutex> lock(comm->mutex);
  if (comm->pending) {
    comm->pending->cancel.cancel("the init was aborted (tutti_comm_abort)");
    return TUTTI_OK;
  }
  tutti::comm::Comm* impl = live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  return guarded(api, [&] { impl->abort(); });
}

TUTTI_API tutti_status tutti_comm_destroy(tutti_comm* comm) {
  if (comm == nullptr) return TUTTI_OK;
  if (comm->tag != tutti_comm::kLiveTag || (!comm->impl && !comm->pending)) {
    tutti::capi::refuse_comm(comm, "tutti_comm_destroy");
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  return guarded("tutti_comm_destroy", [&] {
    std::unique_ptr<tutti::capi::PendingInit> pending;
    {
      std::lock_guard<std::mutex> lock(comm->mutex);
      comm->tag = tutti_comm::kDeadTag;
      pending = std::move(comm->pending);
    }
    pending.reset();  // gives a running init up and waits for its thread
    comm->impl.reset();
    delete comm;
  });
}

}  // extern "C"
