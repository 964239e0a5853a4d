// The store's state without I/O (runtime/store/key_space.cc): parked requests wake
// only for their own keys, expire in deadline order, and leave no trace when dropped.
#include <criterion/criterion.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/store/key_space.h"

using tutti::Status;
using tutti::store::KeySpace;
using tutti::store::ServerLimits;
using tutti::store::Waiter;
using namespace tutti::store::protocol;

namespace {

struct Fixture {
  Fixture() : keys(ServerLimits{}, [this](std::unique_ptr<Waiter> w) { ready.push_back(std::move(w)); }) {}

  Reply run(Op op, std::vector<std::string> k, std::string value = "", int64_t number = 0) {
    Request r;
    r.op = op;
    r.keys = std::move(k);
    r.value = std::move(value);
    r.number = number;
    auto reply = keys.handle(r);
    cr_assert(reply.has_value(), "%s was parked", op_name(op).c_str());
    return *reply;
  }
  Waiter* park(Op op, std::vector<std::string> k, uint64_t deadline, bool any = false, bool with_value = false) {
    Request r;
    r.op = op;
    r.keys = std::move(k);
    r.wait_any = any;
    r.with_value = with_value;
    r.number = 1000;
    cr_assert(!keys.handle(r).has_value());
    return keys.park(nullptr, r, deadline);
  }

  std::vector<std::unique_ptr<Waiter>> ready;
  KeySpace keys;
};

}  // namespace

Test(key_space, a_set_wakes_only_the_waiters_of_its_key, .timeout = 10) {
  Fixture f;
  Waiter* a = f.park(Op::kGet, {"a"}, 100);
  f.park(Op::kGet, {"b"}, 100);
  f.run(Op::kSet, {"c"}, "x");
  cr_assert(f.ready.empty());
  f.run(Op::kSet, {"a"}, "1");
  cr_assert_eq(f.ready.size(), 1u);
  cr_assert_eq(f.ready[0].get(), a);
  Reply reply = f.keys.answer(*f.ready[0], Status::kOk);
  cr_assert_eq(reply.values.at(0), "1");
}

Test(key_space, wait_all_needs_every_key_and_any_needs_one, .timeout = 10) {
  Fixture f;
  f.park(Op::kMultiGet, {"x", "y", "x"}, 100);
  f.park(Op::kWait, {"p", "y"}, 100, /*any=*/true);
  f.run(Op::kSet, {"x"}, "1");
  cr_assert(f.ready.empty());
  f.run(Op::kSet, {"y"}, "2");
  cr_assert_eq(f.ready.size(), 2u);
  for (auto& w : f.ready) {
    Reply r = f.keys.answer(*w, Status::kOk);
    if (w->request.op == Op::kMultiGet) {
      cr_assert_eq(r.values, (std::vector<std::string>{"1", "2", "1"}));
    } else {
      cr_assert_eq(r.number, 1);
    }
  }
}

// A key seen set and then deleted before the waiter's last key comes is waited for
// again; once every key is there, the waiter is answered and leaves every index.
Test(key_space, a_key_deleted_after_it_was_seen_is_waited_for_again, .timeout = 10) {
  Fixture f;
  Waiter* waiter = f.park(Op::kMultiGet, {"a", "b"}, 100);
  f.run(Op::kSet, {"a"}, "1");
  f.run(Op::kDelete, {"a"});
  f.run(Op::kSet, {"b"}, "2");
  cr_assert(f.ready.empty(), "answered without a");
  f.run(Op::kSet, {"a"}, "3");
  cr_assert_eq(f.ready.size(), 1u);
  cr_assert_eq(f.ready[0].get(), waiter);
  cr_assert_eq(f.keys.answer(*f.ready[0], Status::kOk).values, (std::vector<std::string>{"3", "2"}));
  cr_assert(!f.keys.next_deadline().has_value(), "the answered waiter left the deadlines");
  f.run(Op::kSet, {"b"}, "4");  // its keys' indexes must not list it any more
  cr_assert_eq(f.ready.size(), 1u);
}

Test(key_space, get_any_answers_the_first_present_key_and_its_value, .timeout = 10) {
  Fixture f;
  f.park(Op::kWait, {"place/3", "abort", "lost/1"}, 100, /*any=*/true, /*with_value=*/true);
  f.run(Op::kSet, {"lost/1"}, "rank 5 ended");
  cr_assert_eq(f.ready.size(), 1u);
  Reply r = f.keys.answer(*f.ready[0], Status::kOk);
  cr_assert(r.with_value && r.number == 2);
  cr_assert_eq(r.values, (std::vector<std::string>{"rank 5 ended"}));
  // Answered at once when a key is there already: the first present one, in order.
  f.run(Op::kSet, {"place/3"}, "0 8 0");
  Request now;
  now.op = Op::kWait;
  now.keys = {"abort", "place/3", "lost/1"};
  now.wait_any = true;
  now.with_value = true;
  now.number = 1000;
  auto reply = f.keys.handle(now);
  cr_assert(reply.has_value() && reply->number == 1 && reply->values.at(0) == "0 8 0");
}

Test(key_space, expiry_goes_by_deadline_and_drop_forgets, .timeout = 10) {
  Fixture f;
  f.park(Op::kGet, {"k"}, 300);
  Waiter* early = f.park(Op::kGet, {"k"}, 100);
  Waiter* dropped = f.park(Op::kGet, {"k"}, 200);
  cr_assert_eq(*f.keys.next_deadline(), 100u);
  f.keys.drop(dropped);
  auto expired = f.keys.take_expired(150);
  cr_assert_eq(expired.size(), 1u);
  cr_assert_eq(expired[0].get(), early);
  cr_assert(f.keys.answer(*expired[0], Status::kTimeout).status == Status::kTimeout);
  cr_assert_eq(*f.keys.next_deadline(), 300u);
  f.run(Op::kSet, {"k"}, "v");
  cr_assert_eq(f.ready.size(), 1u);
  cr_assert(!f.keys.next_deadline().has_value());
}

Test(key_space, immediate_answers_and_zero_timeouts, .timeout = 10) {
  Fixture f;
  cr_assert(f.run(Op::kGet, {"none"}, "", 0).status == Status::kTimeout);
  cr_assert_eq(f.run(Op::kAdd, {"n"}, "", 5).number, 5);
  cr_assert_eq(f.run(Op::kGet, {"n"}, "", 0).values.at(0), "5");
  cr_assert_eq(f.run(Op::kDelete, {"n"}).number, 1);
  cr_assert_eq(f.run(Op::kDelete, {"n"}).number, 0);
  cr_assert_eq(f.keys.keys(), 0u);
  cr_assert_eq(f.keys.bytes(), 0u);
}

// A MULTI_SET is stored whole or not at all, wakes the waiters of each of its keys, and
// a key given twice takes its last value.
Test(key_space, multi_set_is_all_or_nothing, .timeout = 10) {
  ServerLimits limits;
  limits.max_keys = 4;
  std::vector<std::unique_ptr<Waiter>> ready;
  KeySpace keys(limits, [&](std::unique_ptr<Waiter> w) { ready.push_back(std::move(w)); });
  Request wait;
  wait.op = Op::kMultiGet;
  wait.keys = {"a", "b"};
  wait.number = 1000;
  cr_assert(!keys.handle(wait).has_value());
  keys.park(nullptr, wait, 100);

  Request set;
  set.op = Op::kMultiSet;
  set.keys = {"a", "b", "a"};
  set.values = {"1", "2", "3"};
  auto reply = keys.handle(set);
  cr_assert(reply.has_value() && reply->status == Status::kOk);
  cr_assert_eq(ready.size(), 1u);
  cr_assert_eq(keys.answer(*ready[0], Status::kOk).values, (std::vector<std::string>{"3", "2"}));
  cr_assert_eq(keys.keys(), 2u);
  cr_assert_eq(keys.bytes(), 4u);

  // Three new keys would make 5, over max_keys (4): none of them is stored.
  set.keys = {"c", "d", "e"};
  reply = keys.handle(set);
  cr_assert(reply.has_value() && reply->status == Status::kInvalidArgument);
  cr_assert(reply->message.find("would hold 5 keys, over its max_keys (4)") != std::string::npos, "%s",
            reply->message.c_str());
  cr_assert_eq(keys.keys(), 2u);
  // Overwriting the two there and adding two fits exactly.
  set.keys = {"a", "b", "c", "d"};
  set.values = {"x", "y", "z", "w"};
  reply = keys.handle(set);
  cr_assert(reply.has_value() && reply->status == Status::kOk, "%s", reply->message.c_str());
  cr_assert_eq(keys.keys(), 4u);
  cr_assert_eq(keys.bytes(), 8u);
  set.values.pop_back();
  reply = keys.handle(set);
  cr_assert(reply.has_value() && reply->status == Status::kInvalidArgument);
}
