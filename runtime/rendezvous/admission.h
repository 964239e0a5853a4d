// Admission: how processes that join a running job (tutti_comm_join) get their seats
// in a communicator that grows (tutti_comm_grow), through the store. A joiner knows no
// communicator, so the keys are the job's, outside every communicator's:
//   join/tickets     how many tickets joiners have taken; each takes the next
//   join/ticket/<t>  the identity ("host:pid") of ticket t's joiner, set as it takes it
//   join/claimed     how many tickets growing communicators have claimed, in order
//   join/seat/<t>    ticket t's fate, set once, by compare-and-set: the seat a grow
//                    gave it; kExpired, a grow gave up waiting for it before its joiner
//                    came (that joiner takes another ticket); or kWithdrawn, its joiner
//                    gave up waiting (the grow claims another)
// Joiners are admitted in the order they came, whichever communicator grows; the
// compare-and-set on a seat decides every race between a grow and a joiner that
// gives up.
#pragma once

#include <string>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/store/client.h"

namespace tutti::rendezvous {

// The joiner's side: takes a ticket in the name of identity and waits until a grow
// seats it; returns the seat, as the grow wrote it. At the deadline, withdraws and
// throws Error(kTimeout) with a message that starts with api (unless a grow seated it
// in that instant: then the seat is returned).
std::string await_seat(store::Client& store, const std::string& identity, Deadline deadline, const char* api);

// The grow's side: claims the next seats.size() joiners in the order they came and
// gives the i-th seats[i]. Returns their identities. At the deadline, throws
// Error(kTimeout) whose message says how many came of how many were wanted; the
// joiners seated by then keep their seats, and whoever grows must tell them the grow
// failed (see grow.cc's verdict).
std::vector<std::string> admit_joiners(store::Client& store, const std::vector<std::string>& seats, Deadline deadline);

}  // namespace tutti::rendezvous
