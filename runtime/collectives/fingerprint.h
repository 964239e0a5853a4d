// The check mode (TUTTI_CHECK=1): before a collective runs, every rank shares a
// fingerprint of its call (which collective, its sequence number, count, dtype, op,
// root) and compares them all, so that ranks which disagree fail with kMismatch
// naming who differs in what, instead of a wrong result or a timeout.
#pragma once

#include "runtime/collectives/call.h"
#include "runtime/collectives/op_context.h"
#include "runtime/transport/transport.h"

namespace tutti::collectives {

// Collective over the transport's ranks; throws Error(kMismatch) on every rank when
// any two fingerprints differ.
void verify_fingerprints(transport::Transport& transport, const OpContext& context, const Call& call);

}  // namespace tutti::collectives
