// The store's wire codec (runtime/store/protocol.cc): every op round-trips, and the
// decoder turns truncated input into "need more" and garbage into ProtocolError, never
// into a crash or an unbounded buffer.
#include <criterion/criterion.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/store/protocol.h"
#include "tests/runtime/store/store_test.h"

using tutti::Status;
using namespace tutti::store::protocol;

namespace {

using store_test::contains;

Frame one_frame(const std::string& bytes, size_t max = 1u << 20) {
  Decoder decoder(max);
  decoder.feed(bytes.data(), bytes.size());
  auto frame = decoder.next();
  cr_assert(frame.has_value());
  cr_assert_eq(decoder.buffered(), 0u);
  return *frame;
}

Request round_trip(const Request& r) { return decode_request(one_frame(encode(r))); }
Reply round_trip(const Reply& r) { return decode_reply(one_frame(encode(r))); }

Request request(Op op, std::vector<std::string> keys, uint32_t id = 7) {
  Request r;
  r.op = op;
  r.id = id;
  r.keys = std::move(keys);
  return r;
}

// The ProtocolError message for feeding bytes and draining; fails when none is thrown.
std::string decode_error(const std::string& bytes, size_t max = 1u << 20) {
  Decoder decoder(max);
  try {
    decoder.feed(bytes.data(), bytes.size());
    while (auto frame = decoder.next()) {
      if (frame->header.flags & kFlagReply) {
        decode_reply(*frame);
      } else {
        decode_request(*frame);
      }
    }
  } catch (const ProtocolError& e) {
    cr_assert(e.status() == Status::kTransport);
    return e.what();
  }
  cr_assert_fail("no protocol error for %zu bytes", bytes.size());
  return "";
}

std::string header(uint32_t body, uint8_t version, uint8_t op, uint16_t flags, uint32_t id) {
  std::string h;
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(body >> (8 * i)));
  h.push_back(static_cast<char>(version));
  h.push_back(static_cast<char>(op));
  h.push_back(static_cast<char>(flags & 0xff));
  h.push_back(static_cast<char>(flags >> 8));
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(id >> (8 * i)));
  return h;
}

}  // namespace

Test(protocol, header_layout_is_little_endian, .timeout = 10) {
  Request r = request(Op::kGet, {"k"}, 0x01020304);
  r.number = 5;
  std::string bytes = encode(r);
  cr_assert_eq(bytes.size(), kHeaderBytes + 4 + 1 + 8);
  cr_assert_eq(bytes.substr(0, 12), header(13, 1, 3, 0, 0x01020304));
  cr_assert_eq(bytes[12], 1);  // string length, little endian
  cr_assert_eq(bytes[16], 'k');
}

Test(protocol, requests_round_trip, .timeout = 10) {
  Request hello = request(Op::kHello, {});
  hello.number = kVersion;
  hello.value = "node7:1234";
  Request got = round_trip(hello);
  cr_assert(got.op == Op::kHello && got.id == 7 && got.number == 1 && got.value == "node7:1234" &&
            got.expected.empty());

  Request set = request(Op::kSet, {"key"});
  set.value = std::string("va\0lue", 6);
  got = round_trip(set);
  cr_assert(got.op == Op::kSet && got.keys == set.keys && got.value == set.value);

  Request get = request(Op::kGet, {"rdzv/done"});
  get.number = 5000;
  got = round_trip(get);
  cr_assert(got.op == Op::kGet && got.keys == get.keys && got.number == 5000);

  Request add = request(Op::kAdd, {"counter"});
  add.number = -42;
  got = round_trip(add);
  cr_assert(got.op == Op::kAdd && got.keys == add.keys && got.number == -42);

  Request cas = request(Op::kCompareSet, {"k"});
  cas.expected = "old";
  cas.value = "new";
  got = round_trip(cas);
  cr_assert(got.op == Op::kCompareSet && got.expected == "old" && got.value == "new");

  for (bool any : {false, true}) {
    for (bool with_value : {false, true}) {
      Request wait = request(Op::kWait, {"a", "b", ""});
      wait.wait_any = any;
      wait.with_value = with_value;
      wait.number = 1;
      got = round_trip(wait);
      cr_assert(got.op == Op::kWait && got.keys == wait.keys && got.wait_any == any && got.number == 1);
      // A value comes back only for WAIT any (GET_ANY).
      cr_assert_eq(got.with_value, any && with_value);
    }
  }

  got = round_trip(request(Op::kCheck, {"x", "y"}));
  cr_assert(got.op == Op::kCheck && got.keys.size() == 2 && got.keys[1] == "y");

  Request multi = request(Op::kMultiGet, {});
  multi.number = 9;
  got = round_trip(multi);
  cr_assert(got.op == Op::kMultiGet && got.keys.empty() && got.number == 9);

  got = round_trip(request(Op::kDelete, {"gone"}, 0xffffffffu));
  cr_assert(got.op == Op::kDelete && got.keys[0] == "gone" && got.id == 0xffffffffu);

  Request heartbeat = request(Op::kHeartbeat, {});
  heartbeat.number = 20000;
  heartbeat.value = "42 1 1700000000000 all_reduce";
  got = round_trip(heartbeat);
  cr_assert(got.op == Op::kHeartbeat && got.number == 20000 && got.value == heartbeat.value && got.keys.empty());

  Request member = request(Op::kMember, {"world.0/"});
  member.number = -1;
  got = round_trip(member);
  cr_assert(got.op == Op::kMember && got.keys == member.keys && got.number == -1);

  Request multi_set = request(Op::kMultiSet, {"p/0", "p/1", ""});
  multi_set.values = {"0 2 0", std::string("\0\xff", 2), ""};
  got = round_trip(multi_set);
  cr_assert(got.op == Op::kMultiSet && got.keys == multi_set.keys && got.values == multi_set.values);

  Request roster = request(Op::kRoster, {""});
  got = round_trip(roster);
  cr_assert(got.op == Op::kRoster && got.keys == roster.keys);

  for (Op op : {Op::kRelayJoin, Op::kRelayLeave}) {
    Request relayed = request(op, {"world.0/"});
    relayed.number = 70000;
    got = round_trip(relayed);
    cr_assert(got.op == op && got.keys == relayed.keys && got.number == 70000);
  }
}

Test(protocol, replies_round_trip, .timeout = 10) {
  Reply hello;
  hello.op = Op::kHello;
  hello.id = 1;
  hello.number = 1;
  hello.max_frame_bytes = 1 << 24;
  hello.values = {"tutti store h:1", ""};
  Reply got = round_trip(hello);
  cr_assert(got.status == Status::kOk && got.values == hello.values && got.max_frame_bytes == 1 << 24);

  for (Op op : {Op::kSet, Op::kHeartbeat, Op::kMember, Op::kMultiSet, Op::kRelayJoin, Op::kRelayLeave}) {
    Reply empty;
    empty.op = op;
    got = round_trip(empty);
    cr_assert(got.op == op && got.status == Status::kOk && got.values.empty());
  }

  Reply roster;
  roster.op = Op::kRoster;
  roster.values = {
      "world.0/\x1f"
      "0\x1fh:1\x1f"
      "12\x1f"
      "10000\x1f"
      "3 1 1700000000000 all_reduce",
      ""};
  got = round_trip(roster);
  cr_assert(got.op == Op::kRoster && got.values == roster.values);

  for (Op op : {Op::kGet, Op::kCompareSet}) {
    Reply r;
    r.op = op;
    r.values = {"value"};
    got = round_trip(r);
    cr_assert(got.op == op && got.values == r.values);
  }
  for (Op op : {Op::kAdd, Op::kWait, Op::kDelete}) {
    Reply r;
    r.op = op;
    r.number = INT64_MIN;
    got = round_trip(r);
    cr_assert(got.op == op && got.number == INT64_MIN);
  }
  // GET_ANY's answer: the index and its key's value, the flag on the reply's header.
  Reply get_any;
  get_any.op = Op::kWait;
  get_any.number = 2;
  get_any.with_value = true;
  get_any.values = {std::string("pl\0ce", 6)};
  std::string bytes = encode(get_any);
  cr_assert(parse_header(bytes).flags & kFlagWithValue);
  got = round_trip(get_any);
  cr_assert(got.with_value && got.number == 2 && got.values == get_any.values);
  // A store that predates the flag answers without it, and without the value.
  Reply plain_wait;
  plain_wait.op = Op::kWait;
  plain_wait.number = 1;
  got = round_trip(plain_wait);
  cr_assert(!got.with_value && got.values.empty() && got.number == 1);
  // An error carries no value and no flag.
  get_any.status = Status::kTimeout;
  get_any.message = "timed out";
  cr_assert(!(parse_header(encode(get_any)).flags & kFlagWithValue));

  Reply check;
  check.op = Op::kCheck;
  check.flags = {true, false, true};
  got = round_trip(check);
  cr_assert(got.flags == check.flags);

  Reply multi;
  multi.op = Op::kMultiGet;
  multi.values = {"a", "", "ccc"};
  got = round_trip(multi);
  cr_assert(got.values == multi.values);

  Reply error;
  error.op = Op::kGet;
  error.id = 3;
  error.status = Status::kTimeout;
  error.message = "timed out";
  got = round_trip(error);
  cr_assert(got.status == Status::kTimeout && got.message == "timed out" && got.values.empty() && got.id == 3);
}

Test(protocol, truncated_input_needs_more_bytes, .timeout = 10) {
  Request set = request(Op::kSet, {"key"});
  set.value = "value";
  std::string bytes = encode(set) + encode(request(Op::kDelete, {"key"}));
  Decoder decoder(1u << 20);
  std::vector<Frame> frames;
  // One byte at a time: every prefix is "not yet", never an error.
  for (char c : bytes) {
    decoder.feed(&c, 1);
    while (auto frame = decoder.next()) frames.push_back(*frame);
  }
  cr_assert_eq(frames.size(), 2u);
  cr_assert(decode_request(frames[0]).value == "value");
  cr_assert(decode_request(frames[1]).op == Op::kDelete);
  cr_assert_eq(decoder.buffered(), 0u);
}

Test(protocol, wrong_version_is_refused, .timeout = 10) {
  std::string bytes = encode(request(Op::kDelete, {"k"}));
  bytes[4] = 2;
  cr_assert(contains(decode_error(bytes), "protocol version 2, expected 1"));
  // HTTP, say, is refused from its first 12 bytes.
  cr_assert(contains(decode_error("GET / HTTP/1.1\r\n"), "protocol version"));
}

Test(protocol, unknown_opcode_is_refused, .timeout = 10) {
  cr_assert(contains(decode_error(header(0, 1, 0, 0, 0)), "unknown opcode 0"));
  cr_assert(contains(decode_error(header(0, 1, 200, 0, 0)), "unknown opcode 200"));
}

Test(protocol, oversized_header_is_refused_before_the_body, .timeout = 10) {
  // Only the header is fed: the size alone condemns it.
  std::string message = decode_error(header(0xfffffff0u, 1, 2, 0, 1), 1024);
  cr_assert(contains(message, "over the limit of 1024 bytes"), "%s", message.c_str());
  Decoder decoder(1024);
  std::string h = header(2000, 1, 2, 0, 1);
  cr_assert_throw(decoder.feed(h.data(), h.size()), ProtocolError);
}

Test(protocol, malformed_bodies_are_refused, .timeout = 10) {
  // A string length that runs past the end.
  std::string body = std::string("\xff\x00\x00\x00", 4) + "abc";
  std::string message = decode_error(header(static_cast<uint32_t>(body.size()), 1, 9, 0, 1) + body);
  cr_assert(contains(message, "malformed DELETE request") && contains(message, "runs past the end"), "%s",
            message.c_str());
  // Trailing bytes after the last field.
  std::string bytes = encode(request(Op::kDelete, {"k"}));
  bytes[0] = static_cast<char>(bytes[0] + 2);
  bytes += "xx";
  cr_assert(contains(decode_error(bytes), "2 trailing bytes"));
  // A count of strings that the frame cannot hold.
  body = std::string("\xff\xff\xff\x0f", 4);
  message = decode_error(header(4, 1, 7, 0, 1) + body);
  cr_assert(contains(message, "strings runs past the end"), "%s", message.c_str());
  // An i64 cut short.
  body = std::string("\x01\x00\x00\x00k\x01\x02", 7);
  cr_assert(contains(decode_error(header(7, 1, 3, 0, 1) + body), "an i64 runs past the end"));
  // A reply with a status that is not a tutti status, and a request marked as a reply.
  Reply reply;
  reply.op = Op::kSet;
  bytes = encode(reply);
  bytes[12] = 5;
  cr_assert(contains(decode_error(bytes), "is not a tutti status"));
  Frame f = one_frame(encode(reply));
  cr_assert_throw(decode_request(f), ProtocolError);
  // CHECK flags that are not 0 or 1.
  Reply check;
  check.op = Op::kCheck;
  check.flags = {true};
  bytes = encode(check);
  bytes.back() = 7;
  cr_assert(contains(decode_error(bytes), "neither 0 nor 1"));
  // A MULTI_SET whose values are not one per key.
  Request uneven = request(Op::kMultiSet, {"a", "b"});
  uneven.values = {"1"};
  message = decode_error(encode(uneven));
  cr_assert(contains(message, "MULTI_SET has 2 keys but 1 values"), "%s", message.c_str());
}

Test(protocol, random_bytes_never_crash, .timeout = 60) {
  std::mt19937_64 random(12345);
  size_t errors = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string bytes(random() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    // Half the time, start from a plausible header so the body parsers get exercised.
    if (round % 2 == 0 && bytes.size() >= kHeaderBytes) {
      uint32_t body = static_cast<uint32_t>(bytes.size() - kHeaderBytes);
      bytes.replace(0, kHeaderBytes,
                    header(body, 1, static_cast<uint8_t>(1 + random() % 9), static_cast<uint16_t>(random() % 4), 1));
    }
    Decoder decoder(4096);
    try {
      decoder.feed(bytes.data(), bytes.size());
      while (auto frame = decoder.next()) {
        if (frame->header.flags & kFlagReply) {
          decode_reply(*frame);
        } else {
          decode_request(*frame);
        }
      }
    } catch (const ProtocolError&) {
      ++errors;
    }
    cr_assert_leq(decoder.buffered(), bytes.size());
  }
  cr_assert_gt(errors, 0u);
}

Test(protocol, a_decoder_lets_a_big_frame_go_once_it_is_handed_out, .timeout = 10) {
  Request big = request(Op::kSet, {"k"});
  big.value = std::string(1 << 20, 'x');
  std::string bytes = encode(big);
  Decoder decoder(2u << 20);
  decoder.feed(bytes.data(), bytes.size());
  cr_assert_geq(decoder.held(), bytes.size());
  auto frame = decoder.next();
  cr_assert(frame.has_value() && decode_request(*frame).value.size() == big.value.size());
  cr_assert_leq(decoder.held(), 4096u, "an emptied decoder still holds %zu bytes", decoder.held());
  // Small frames keep their buffer (no allocation per frame).
  std::string small = encode(request(Op::kGet, {"k"}));
  decoder.feed(small.data(), small.size());
  cr_assert(decoder.next().has_value());
  cr_assert_gt(decoder.held(), 0u);
}

Test(protocol, frame_limit_counts_the_header, .timeout = 10) {
  Request set = request(Op::kSet, {"k"});
  set.value = std::string(100, 'v');
  std::string bytes = encode(set);
  one_frame(bytes, bytes.size());  // exactly at the limit: fine
  cr_assert(contains(decode_error(bytes, bytes.size() - 1), "over the limit"));
}

Test(protocol, op_names, .timeout = 10) {
  cr_assert_eq(op_name(Op::kMultiGet), "MULTI_GET");
  cr_assert_eq(op_name(Op::kMultiSet), "MULTI_SET");
  cr_assert_eq(op_name(Op::kRoster), "ROSTER");
  cr_assert_eq(op_name(Op::kRelayJoin), "RELAY_JOIN");
  cr_assert_eq(op_name(Op::kRelayLeave), "RELAY_LEAVE");
  cr_assert_eq(op_name(static_cast<Op>(0x2a)), "op 0x2a");
}
