#include "runtime/rendezvous/admission.h"

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::rendezvous {
namespace {

constexpr const char* kTickets = "join/tickets";
constexpr const char* kClaimed = "join/claimed";
// A seat never starts with '!': seats are what grow.cc writes, a rank first.
constexpr const char* kExpired = "!expired";
constexpr const char* kWithdrawn = "!withdrawn";

std::string ticket_key(int64_t ticket) { return concat("join/ticket/", ticket); }
std::string seat_key(int64_t ticket) { return concat("join/seat/", ticket); }

bool is_timeout(const Error& error) { return error.status() == Status::kTimeout; }

}  // namespace

std::string await_seat(store::Client& store, const std::string& identity, Deadline deadline, const char* api) {
  while (true) {
    const int64_t ticket = store.add(kTickets, 1, deadline);
    store.set(ticket_key(ticket), identity, deadline);
    std::string seat;
    try {
      seat = store.get(seat_key(ticket), deadline);
    } catch (const Error& error) {
      if (!is_timeout(error)) throw;
      // Gives the ticket up, unless a grow seated it in that instant.
      seat = store.compare_set(seat_key(ticket), "", kWithdrawn, Deadline::after_ms(2000));
      if (seat == kWithdrawn || seat == kExpired) {
        fail(Status::kTimeout,
             concat(api, ": no communicator grew to admit this process (joiner #", ticket,
                    " of the job): the job's ranks must call tutti_comm_grow, one more rank for each joiner, "
                    "before init_timeout_ms passes here"));
      }
    }
    if (seat != kExpired) return seat;
    // A grow gave up waiting for this ticket before this process took it: the next grow
    // claims a later one.
  }
}

std::vector<std::string> admit_joiners(store::Client& store, const std::vector<std::string>& seats, Deadline deadline) {
  std::vector<std::string> identities;
  while (identities.size() < seats.size()) {
    const int64_t ticket = store.add(kClaimed, 1, deadline);
    std::string identity;
    try {
      identity = store.get(ticket_key(ticket), deadline);
    } catch (const Error& error) {
      if (!is_timeout(error)) throw;
      // Nobody has taken this ticket yet: it expires, and the joiner that takes it
      // later takes another, for the next grow.
      store.compare_set(seat_key(ticket), "", kExpired, Deadline::after_ms(2000));
      fail(Status::kTimeout, concat(identities.size(), " of the ", seats.size(), " joiners came"));
    }
    const std::string& seat = seats[identities.size()];
    if (store.compare_set(seat_key(ticket), "", seat, deadline) == seat) identities.push_back(identity);
    // else its joiner gave up waiting: the next ticket's may still be there.
  }
  return identities;
}

}  // namespace tutti::rendezvous
