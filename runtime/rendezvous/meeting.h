// The meeting: how the ranks of a plan find each other in the store and learn their
// place (local rank, local size, node rank), and how they leave it. Every rank sends a
// fixed handful of requests whatever the world size, so a meeting of N ranks costs the
// store O(N) work, not O(N^2); rank 0 alone reads all N arrivals, to number the nodes.
#pragma once

#include <string>

#include "runtime/common/deadline.h"
#include "runtime/rendezvous/plan.h"
#include "runtime/store/client.h"

namespace tutti::rendezvous {

struct Place {
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  int local_size = -1;
  int node_rank = -1;
};

// Meets the plan's ranks under key prefix `prefix`, on a connection of the new
// communicator's own. identity ("host:pid") names this rank in other ranks' messages;
// api ("tutti_comm_init") starts every message. From its claim of a rank on, the
// store watches the connection for the rest of the deadline (a rank that ends before
// all have arrived fails the others' wait at once, kPeerLost naming it); a successful
// meeting leaves that watch to the communicator's failure detector, or to unwatch.
// Throws Error: kTimeout naming the ranks that never arrived; kPeerLost naming a rank
// that arrived and was lost; kInvalidArgument when two processes claim one rank;
// kMismatch when ranks disagree on the world size; kTransport, at once, when the store
// turns a connection away for want of room (store::kRefusedKey); kDenied when the
// store that rank 0 serves for this init denied a connection (a rank without the
// secret) and no rank has arrived for 5 s since; and whatever the store throws.
Place meet(store::Client& store, const std::string& prefix, const Plan& plan, const std::string& identity,
           Deadline deadline, const char* api);
// Ends the store's watch of this connection (meet's, or the failure detector's), so
// that closing it is a clean leave rather than a loss. Never throws.
void unwatch(store::Client& store);

// Says this rank is done with the meeting's keys. The rank serving the store calls it
// with wait_for_all, so that it keeps the store up until every rank has left or been
// declared lost (or the deadline passes, which it logs with the ranks still there).
// Never throws.
void leave(store::Client& store, const std::string& prefix, int rank, int size, bool wait_for_all, Deadline deadline);

// Failure etiquette for steps that meet through the store (init, split). Each rank
// counts itself in when the step starts (enter) and, when the step fails on it, out
// (depart_after_failure). The process serving the store then waits, at most a few
// seconds, until every rank that came in has gone out or been declared lost: programs
// exit on errors, and the others could otherwise not read why the step failed, only
// that the store went.
void enter(store::Client& store, const std::string& prefix, Deadline deadline);
void depart_after_failure(store::Client& store, const std::string& prefix, bool serves_store);

// Waits until every rank in [0, size) has its key prefix+"<what>/<rank>" or has been
// declared lost under lost_prefix (store/loss_event.h), polling, since lost ranks never
// set theirs. Returns, per rank, whether it has its key and was not declared lost. At
// the deadline, throws Error(kTimeout) whose message is the ranks with neither, as
// "2, 5": the caller says what they failed to do.
std::vector<bool> wait_present_or_lost(store::Client& store, const std::string& prefix, const std::string& what,
                                       const std::string& lost_prefix, int size, Deadline deadline);

// The ranks in [0, size) whose key prefix+"<what>/<rank>" is absent, as "2, 5, 7"
// (at most 32 named, then "and N more"); "" when every key is there or the store
// cannot tell before the deadline.
std::string absent_ranks(store::Client& store, const std::string& prefix, const std::string& what, int size,
                         Deadline deadline);
// absent_ranks, read once for all the ranks that ask it under prefix and what on one
// occasion ("timeout", "report 10000", ...): the first to ask reads the N keys and
// publishes the list ("<prefix>absent/<what>/<occasion>"), the others read the list.
// When N ranks time out together, their diagnosis costs the store O(N) reads rather
// than N^2. A list is as old as its occasion's first ask, so a later occasion (the
// timeout after a wait report) must be named apart, or it would name ranks that have
// come since.
std::string shared_absent_ranks(store::Client& store, const std::string& prefix, const std::string& what,
                                const std::string& occasion, int size, Deadline deadline);

}  // namespace tutti::rendezvous
