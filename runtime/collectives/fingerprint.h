// The check mode (TUTTI_CHECK=1): before a collective runs, every rank shares a
// fingerprint of its call (which collective, its sequence number, count, dtype, op,
// root) and compares them all, so that ranks which disagree fail with kMismatch
// naming who differs in what, instead of a wrong result or a timeout.
#pragma once

#include "runtime/operation/call.h"
#include "runtime/operation/op_context.h"
#include "runtime/transport/transport.h"

namespace tutti::collectives {

// Collective over the transport's ranks; throws Error(kMismatch) on every rank when
// any two fingerprints differ.
void verify_fingerprints(transport::Transport& transport, const OpContext& context, const Call& call);

// The call's fingerprint (without its sequence number) folded to Tag::check's bits:
// what every message of the collective carries, so that a rank receiving from one that
// made another call fails with kMismatch whether or not TUTTI_CHECK is on (1 chance in
// 2048 that two different calls fold alike and pass).
uint16_t folded_fingerprint(const Call& call);

}  // namespace tutti::collectives
