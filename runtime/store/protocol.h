// The rendezvous store's wire protocol: length-prefixed binary frames. Pure encoding and
// decoding, no I/O, so that a test can feed it garbage.
//
// Frame = 12-byte header, then body. All integers are little endian.
//   u32 body length | u8 version (=1) | u8 opcode | u16 flags | u32 request id
// A reply has the request's opcode and id, with kFlagReply set. Body fields are
//   u32 (counts), i32 (status), i64 (numbers) and str (u32 length + bytes).
//
// Request bodies:
//   HELLO        i64 version, str client ("host:pid"), str auth (empty: no credentials)
//   SET          str key, str value
//   GET          str key, i64 timeout_ms (waits for the key)
//   ADD          str key, i64 delta
//   COMPARE_SET  str key, str expected, str desired
//   WAIT         u32 n, n × str key, i64 timeout_ms; kFlagWaitAny: any key, else all
//   CHECK        u32 n, n × str key
//   MULTI_GET    u32 n, n × str key, i64 timeout_ms (waits for all keys)
//   DELETE       str key
//   HEARTBEAT    i64 timeout_ms, str activity
//   MEMBER       str prefix, i64 rank
//   MULTI_SET    u32 n, n × str key, u32 n, n × str value (as many values as keys)
//   ROSTER       str prefix (empty: every group)
//   RELAY_JOIN   str prefix, i64 rank
//   RELAY_LEAVE  str prefix, i64 rank
// Reply bodies: i32 status (a tutti::Status), str message, then, only when the status
// is kOk:
//   HELLO        i64 version, str server, i64 max_frame_bytes, str auth (a challenge,
//                or the server's proof)
//   GET          str value            ADD          i64 value
//   COMPARE_SET  str value            WAIT         i64 index (of a present key; 0 for all),
//                                                  then str value with kFlagWithValue
//   CHECK        str flags (one byte per key, 0 or 1)
//   MULTI_GET    u32 n, n × str value DELETE       i64 existed (0 or 1)
//   ROSTER       u32 n, n × str member (store/roster.h: one line per member of a group)
//   SET, HEARTBEAT, MEMBER, MULTI_SET, RELAY_JOIN, RELAY_LEAVE  nothing
//
// Failure detection (see liveness.h): HEARTBEAT asks the server to watch this
// connection, declaring it lost when no frame arrives for timeout_ms or when it closes
// (timeout_ms 0 stops the watch: a clean leave). MEMBER says the connection is rank
// `rank` of the group whose keys live under `prefix`; the server writes that group's
// loss events and activity there. ROSTER reads back what the server knows of the
// members of groups: what each last reported doing and how long it has been silent,
// for `tutti top`.
//
// A relay (relay.h) is a store in front of the store: the ranks of its node connect to
// it, it watches them, and it carries their key requests up one connection. It says
// RELAY_JOIN for each rank of a group it carries, and RELAY_LEAVE when that rank has
// left or it declared it lost itself: the store then watches the relay's connection
// for all of them, and declares each still carried lost when the relay goes.
//
// The handshake carries authentication without a version bump: a server that wants
// credentials answers HELLO with a non-empty challenge, and the client sends a second
// HELLO whose auth field answers it; handshake.h has the exchange (mutual HMAC-SHA256
// over the job secret). A server without a secret sends an empty challenge, as the
// first release's did, and a server with one answers a HELLO without credentials
// with status kDenied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/common/status.h"

namespace tutti::store::protocol {

constexpr uint8_t kVersion = 1;
constexpr size_t kHeaderBytes = 12;

enum class Op : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kAdd = 4,
  kCompareSet = 5,
  kWait = 6,
  kCheck = 7,
  kMultiGet = 8,
  kDelete = 9,
  kHeartbeat = 10,
  kMember = 11,
  kMultiSet = 12,
  kRoster = 13,
  kRelayJoin = 14,
  kRelayLeave = 15,
};

// "SET", "MULTI_GET", ...; "op 0x2a" for a value outside the enum.
std::string op_name(Op op);
bool is_known_op(uint8_t op);

constexpr uint16_t kFlagReply = 1u << 0;
constexpr uint16_t kFlagWaitAny = 1u << 1;
// On a WAIT any: answer with the present key's value too (a GET of whichever key comes
// first, in one round trip). A server that honours it sets it on the reply, whose body
// then ends with str value; one that predates it ignores it, as below, and its reply
// has no value (the client then GETs the key).
// On a HEARTBEAT: answer with the server's wall clock (microseconds since the epoch,
// as decimal text), by which a rank's trace is aligned with the others' (trace/trace.h).
constexpr uint16_t kFlagWithValue = 1u << 2;
// Other flag bits are reserved: senders leave them 0 and receivers ignore them.

struct Header {
  uint32_t body_bytes = 0;
  uint8_t version = kVersion;
  Op op = Op::kHello;
  uint16_t flags = 0;
  uint32_t id = 0;
};

struct Frame {
  Header header;
  std::string body;
};

// A request, with the fields its op uses (see the table above); others stay empty.
struct Request {
  Op op = Op::kHello;
  uint32_t id = 0;
  bool wait_any = false;            // WAIT
  bool with_value = false;          // WAIT any: the reply carries the present key's value;
                                    // HEARTBEAT: the server's clock
  std::vector<std::string> keys;    // one key for SET, GET, ADD, COMPARE_SET, DELETE; MEMBER, RELAY_* and ROSTER prefix
  std::vector<std::string> values;  // MULTI_SET, one per key
  std::string value;                // SET value, COMPARE_SET desired, HELLO client, HEARTBEAT activity
  std::string expected;             // COMPARE_SET expected, HELLO auth
  int64_t number = 0;               // GET/WAIT/MULTI_GET/HEARTBEAT timeout_ms, ADD delta, HELLO version,
                                    // MEMBER and RELAY_* rank
};

struct Reply {
  Op op = Op::kHello;
  uint32_t id = 0;
  Status status = Status::kOk;
  std::string message;              // why, when status is not kOk
  std::vector<std::string> values;  // GET/COMPARE_SET: one; MULTI_GET, ROSTER: n; HELLO: server, challenge
  std::vector<bool> flags;          // CHECK
  int64_t number = 0;               // ADD value, WAIT index, DELETE existed, HELLO version
  int64_t max_frame_bytes = 0;      // HELLO
  bool with_value = false;          // WAIT: values[0] is the present key's value;
                                    // HEARTBEAT: the server's clock
};

// What a peer did wrong on the wire; the connection cannot continue after it.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& message) : Error(Status::kTransport, message) {}
};

// Whole frames, ready to write. Throw Error(kInvalidArgument) when the body would not
// fit the u32 length.
std::string encode(const Request& request);
std::string encode(const Reply& reply);
// reply as the answer to request id instead of reply.id: a relay's answer to the rank
// whose request it carried up, without a copy of the reply.
std::string encode(const Reply& reply, uint32_t id);

// Parse a frame's body. Throw ProtocolError for a body that does not match its op: a
// string or count running past the end, trailing bytes, a reply flag where a request
// belongs (or the reverse), a status that is not a tutti::Status.
Request decode_request(const Frame& frame);
Reply decode_reply(const Frame& frame);

// Cuts a byte stream into frames. The header is checked as soon as its 12 bytes are
// in, before the body is buffered, so an oversized or foreign stream fails after at
// most one read's worth of bytes. The caller drains next() after each feed().
class Decoder {
 public:
  explicit Decoder(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Throws ProtocolError when the header of the frame now in progress is bad.
  void feed(const char* data, size_t size);
  // The next whole frame, or nullopt until more bytes come. Throws ProtocolError for a
  // bad header (wrong version, unknown opcode, header and body over max_frame_bytes).
  std::optional<Frame> next();

  // Lets a connection raise its limit once it is past the handshake.
  void set_max_frame_bytes(size_t max_frame_bytes) { max_frame_bytes_ = max_frame_bytes; }
  // Bytes received that are not yet part of a frame handed out.
  size_t buffered() const { return buffer_.size() - offset_; }
  // Bytes of memory its buffer holds: once emptied, at most a few KiB, whatever frame
  // it held before (a server keeps one decoder per connection).
  size_t held() const { return buffer_.capacity(); }

 private:
  void check_header() const;

  size_t max_frame_bytes_;  // header and body
  std::string buffer_;
  size_t offset_ = 0;  // start of the first byte not handed out
};

Header parse_header(std::string_view bytes);  // bytes.size() >= kHeaderBytes; no checks

}  // namespace tutti::store::protocol
