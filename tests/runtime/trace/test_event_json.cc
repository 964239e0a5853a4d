// A trace event as a line of the file (trace/event_json.h): each phase's fields, the
// arguments that are set and only those, statuses by name with the error's text, and
// strings escaped as JSON needs.
#include <criterion/criterion.h>

#include <string>

#include "runtime/trace/event_json.h"

using tutti::Status;
using tutti::trace::append_json;
using tutti::trace::append_json_string;
using tutti::trace::Event;
using tutti::trace::Phase;

namespace {

std::string line_of(const Event& event, const std::string& text = "") {
  std::string out;
  append_json(event, 3, 1234.5678, 2.5, text, &out);
  return out;
}

}  // namespace

Test(event_json, a_collective_begins_with_what_the_call_gave) {
  Event event;
  event.phase = Phase::kBegin;
  event.track = 2;
  event.name = "all_reduce";
  event.cat = "collective";
  event.seq = 42;
  event.bytes = 16;
  event.count = 4;
  event.dtype = "float32";
  event.op = "sum";
  cr_assert_eq(line_of(event),
               "{\"ph\":\"B\",\"pid\":3,\"tid\":2,\"ts\":1234.568,\"name\":\"all_reduce\",\"cat\":\"collective\","
               "\"args\":{\"seq\":42,\"bytes\":16,\"count\":4,\"dtype\":\"float32\",\"op\":\"sum\"}}");
}

Test(event_json, an_end_carries_its_status_and_a_failure_its_error) {
  Event event;
  event.phase = Phase::kEnd;
  event.track = 2;
  event.cat = "collective";
  event.algorithm = "ring";
  event.transport = "ucx";
  event.ended(Status::kOk);
  cr_assert_eq(line_of(event),
               "{\"ph\":\"E\",\"pid\":3,\"tid\":2,\"ts\":1234.568,\"cat\":\"collective\",\"args\":{"
               "\"algorithm\":\"ring\",\"transport\":\"ucx\",\"status\":\"OK\"}}");
  event.algorithm = event.transport = nullptr;
  event.ended(Status::kMismatch);
  cr_assert_eq(line_of(event, "ranks differ"),
               "{\"ph\":\"E\",\"pid\":3,\"tid\":2,\"ts\":1234.568,\"cat\":"
               "\"collective\",\"args\":{\"status\":\"MISMATCH\",\"error\":"
               "\"ranks differ\"}}");
}

Test(event_json, complete_instant_and_asynchronous_events_have_their_own_fields) {
  Event store;
  store.phase = Phase::kComplete;
  store.name = "store";
  store.cat = "store";
  store.ended(Status::kOk);
  cr_assert_eq(line_of(store, "store get \"k\""),
               "{\"ph\":\"X\",\"pid\":3,\"tid\":0,\"ts\":1234.568,\"dur\":2.500,\"name\":\"store\",\"cat\":\"store\","
               "\"args\":{\"status\":\"OK\",\"detail\":\"store get \\\"k\\\"\"}}");
  Event lost;
  lost.phase = Phase::kInstant;
  lost.track = 1;
  lost.name = "rank lost";
  lost.cat = "health";
  cr_assert_eq(line_of(lost),
               "{\"ph\":\"i\",\"pid\":3,\"tid\":1,\"ts\":1234.568,\"name\":\"rank lost\",\"cat\":"
               "\"health\",\"s\":\"t\",\"args\":{}}");
  Event receive;
  receive.phase = Phase::kAsyncBegin;
  receive.track = 2;
  receive.name = "recv";
  receive.cat = "p2p";
  receive.id = 0x2a;
  receive.peer = 0;
  receive.tag = 7;
  cr_assert_eq(line_of(receive),
               "{\"ph\":\"b\",\"pid\":3,\"tid\":2,\"ts\":1234.568,\"name\":\"recv\",\"id\":\"0x2a\","
               "\"cat\":\"p2p\",\"args\":{\"peer\":0,\"tag\":7}}");
}

Test(event_json, strings_are_escaped) {
  std::string out;
  append_json_string("a \"quote\", a \\ and\n\t\x01", &out);
  cr_assert_eq(out, "\"a \\\"quote\\\", a \\\\ and\\n\\t\\u0001\"");
}
