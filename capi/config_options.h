// tutti_config, checked and resolved into the runtime's comm::Options.
#pragma once

#include "runtime/comm/comm.h"
#include "tutti.h"

namespace tutti::capi {

// The longest timeout a config, a variable or tutti_comm_set_op_timeout may give (35 years).
inline constexpr int64_t kMaxTimeoutMs = int64_t{1} << 40;

// NULL means all defaults. Throws Error(kInvalidArgument), its message starting with
// api, for a config that was never initialised or holds values out of range.
// TUTTI_INIT_TIMEOUT_MS and TUTTI_OP_TIMEOUT_MS override the config's timeouts, with a
// log line saying so.
comm::Options comm_options(const tutti_config* config, const char* api = "tutti_comm_init");

}  // namespace tutti::capi
