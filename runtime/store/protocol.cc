#include "runtime/store/protocol.h"

#include <cstring>
#include <limits>

#include "runtime/common/concat.h"

namespace tutti::store::protocol {
namespace {

// A decoder keeps an emptied buffer up to this size for the next frames.
constexpr size_t kKeptBufferBytes = 4096;

void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_i64(std::string& out, int64_t signed_value) {
  auto v = static_cast<uint64_t>(signed_value);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_str(std::string& out, const std::string& s) {
  if (s.size() > std::numeric_limits<uint32_t>::max()) {
    fail(Status::kInvalidArgument, concat("store protocol: a string of ", s.size(), " bytes does not fit a frame"));
  }
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

void put_strs(std::string& out, const std::vector<std::string>& list) {
  if (list.size() > std::numeric_limits<uint32_t>::max()) {
    fail(Status::kInvalidArgument, concat("store protocol: a list of ", list.size(), " strings does not fit a frame"));
  }
  put_u32(out, static_cast<uint32_t>(list.size()));
  for (const auto& s : list) put_str(out, s);
}

uint32_t get_u32_at(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Reads a body field by field, failing on any field that runs past the end.
class Reader {
 public:
  Reader(const Frame& frame, const char* what) : body_(frame.body), what_(what), op_(frame.header.op) {}

  uint32_t u32() {
    need(4, "a u32");
    uint32_t v = get_u32_at(body_.data() + pos_);
    pos_ += 4;
    return v;
  }
  int64_t i64() {
    need(8, "an i64");
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(body_[pos_ + i]);
    pos_ += 8;
    return static_cast<int64_t>(v);
  }
  std::string str() {
    uint32_t size = u32();
    if (size > body_.size() - pos_) {
      bad(concat("a string of ", size, " bytes runs past the end of the frame (", body_.size() - pos_, " bytes left)"));
    }
    std::string s = body_.substr(pos_, size);
    pos_ += size;
    return s;
  }
  std::vector<std::string> strs() {
    uint32_t count = u32();
    // Each string takes at least its 4-byte length: checking that first keeps a lying
    // count from reserving memory the frame could never fill.
    if (count > (body_.size() - pos_) / 4) {
      bad(concat("a count of ", count, " strings runs past the end of the frame"));
    }
    std::vector<std::string> list;
    list.reserve(count);
    for (uint32_t i = 0; i < count; ++i) list.push_back(str());
    return list;
  }
  void end() {
    if (pos_ != body_.size()) bad(concat(body_.size() - pos_, " trailing bytes after the last field"));
  }
  [[noreturn]] void bad(const std::string& why) {
    throw ProtocolError(concat("malformed ", op_name(op_), " ", what_, ": ", why));
  }

 private:
  void need(size_t bytes, const char* field) {
    if (body_.size() - pos_ < bytes) {
      bad(concat(field, " runs past the end of the frame (", body_.size() - pos_, " bytes left)"));
    }
  }

  const std::string& body_;
  const char* what_;
  Op op_;
  size_t pos_ = 0;
};

std::string frame(Op op, uint16_t flags, uint32_t id, const std::string& body) {
  if (body.size() > std::numeric_limits<uint32_t>::max() - kHeaderBytes) {
    fail(Status::kInvalidArgument,
         concat("store protocol: a ", op_name(op), " body of ", body.size(), " bytes does not fit a frame"));
  }
  std::string out;
  out.reserve(kHeaderBytes + body.size());
  put_u32(out, static_cast<uint32_t>(body.size()));
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(op));
  put_u16(out, flags);
  put_u32(out, id);
  out.append(body);
  return out;
}

bool is_status(int64_t v) {
  return v <= static_cast<int64_t>(Status::kOk) && v >= static_cast<int64_t>(Status::kInternal);
}

}  // namespace

std::string op_name(Op op) {
  switch (op) {
    case Op::kHello: return "HELLO";
    case Op::kSet: return "SET";
    case Op::kGet: return "GET";
    case Op::kAdd: return "ADD";
    case Op::kCompareSet: return "COMPARE_SET";
    case Op::kWait: return "WAIT";
    case Op::kCheck: return "CHECK";
    case Op::kMultiGet: return "MULTI_GET";
    case Op::kDelete: return "DELETE";
    case Op::kHeartbeat: return "HEARTBEAT";
    case Op::kMember: return "MEMBER";
    case Op::kMultiSet: return "MULTI_SET";
    case Op::kRoster: return "ROSTER";
    case Op::kRelayJoin: return "RELAY_JOIN";
    case Op::kRelayLeave: return "RELAY_LEAVE";
  }
  static const char kHex[] = "0123456789abcdef";
  auto v = static_cast<uint8_t>(op);
  return concat("op 0x", kHex[v >> 4], kHex[v & 0xf]);
}

bool is_known_op(uint8_t op) {
  return op >= static_cast<uint8_t>(Op::kHello) && op <= static_cast<uint8_t>(Op::kRelayLeave);
}

Header parse_header(std::string_view bytes) {
  Header h;
  h.body_bytes = get_u32_at(bytes.data());
  h.version = static_cast<uint8_t>(bytes[4]);
  h.op = static_cast<Op>(static_cast<uint8_t>(bytes[5]));
  h.flags = static_cast<uint16_t>(static_cast<uint8_t>(bytes[6]) | (static_cast<uint8_t>(bytes[7]) << 8));
  h.id = get_u32_at(bytes.data() + 8);
  return h;
}

std::string encode(const Request& r) {
  std::string body;
  switch (r.op) {
    case Op::kHello:
      put_i64(body, r.number);
      put_str(body, r.value);
      put_str(body, r.expected);
      break;
    case Op::kSet:
      put_str(body, r.keys.at(0));
      put_str(body, r.value);
      break;
    case Op::kGet:
    case Op::kAdd:
      put_str(body, r.keys.at(0));
      put_i64(body, r.number);
      break;
    case Op::kCompareSet:
      put_str(body, r.keys.at(0));
      put_str(body, r.expected);
      put_str(body, r.value);
      break;
    case Op::kWait:
    case Op::kMultiGet:
      put_strs(body, r.keys);
      put_i64(body, r.number);
      break;
    case Op::kCheck: put_strs(body, r.keys); break;
    case Op::kDelete:
    case Op::kRoster: put_str(body, r.keys.at(0)); break;
    case Op::kHeartbeat:
      put_i64(body, r.number);
      put_str(body, r.value);
      break;
    case Op::kMember:
    case Op::kRelayJoin:
    case Op::kRelayLeave:
      put_str(body, r.keys.at(0));
      put_i64(body, r.number);
      break;
    case Op::kMultiSet:
      put_strs(body, r.keys);
      put_strs(body, r.values);
      break;
  }
  uint16_t flags = 0;
  if (r.op == Op::kWait && r.wait_any) flags = r.with_value ? kFlagWaitAny | kFlagWithValue : kFlagWaitAny;
  if (r.op == Op::kHeartbeat && r.with_value) flags = kFlagWithValue;
  return frame(r.op, flags, r.id, body);
}

std::string encode(const Reply& r) { return encode(r, r.id); }

std::string encode(const Reply& r, uint32_t id) {
  std::string body;
  put_u32(body, static_cast<uint32_t>(static_cast<int32_t>(r.status)));
  put_str(body, r.message);
  if (r.status == Status::kOk) {
    switch (r.op) {
      case Op::kHello:
        put_i64(body, r.number);
        put_str(body, r.values.at(0));
        put_i64(body, r.max_frame_bytes);
        put_str(body, r.values.at(1));
        break;
      case Op::kHeartbeat:
        if (r.with_value) put_str(body, r.values.at(0));
        break;
      case Op::kSet:
      case Op::kMember:
      case Op::kRelayJoin:
      case Op::kRelayLeave:
      case Op::kMultiSet: break;
      case Op::kGet:
      case Op::kCompareSet: put_str(body, r.values.at(0)); break;
      case Op::kAdd:
      case Op::kDelete: put_i64(body, r.number); break;
      case Op::kWait:
        put_i64(body, r.number);
        if (r.with_value) put_str(body, r.values.at(0));
        break;
      case Op::kCheck: {
        std::string bytes;
        bytes.reserve(r.flags.size());
        for (bool f : r.flags) bytes.push_back(f ? 1 : 0);
        put_str(body, bytes);
        break;
      }
      case Op::kMultiGet:
      case Op::kRoster: put_strs(body, r.values); break;
    }
  }
  bool with_value = r.status == Status::kOk && (r.op == Op::kWait || r.op == Op::kHeartbeat) && r.with_value;
  return frame(r.op, with_value ? kFlagReply | kFlagWithValue : kFlagReply, id, body);
}

Request decode_request(const Frame& f) {
  Reader in(f, "request");
  if (f.header.flags & kFlagReply) in.bad("the reply flag is set on a request");
  Request r;
  r.op = f.header.op;
  r.id = f.header.id;
  switch (r.op) {
    case Op::kHello:
      r.number = in.i64();
      r.value = in.str();
      r.expected = in.str();
      break;
    case Op::kSet:
      r.keys.push_back(in.str());
      r.value = in.str();
      break;
    case Op::kGet:
    case Op::kAdd:
      r.keys.push_back(in.str());
      r.number = in.i64();
      break;
    case Op::kCompareSet:
      r.keys.push_back(in.str());
      r.expected = in.str();
      r.value = in.str();
      break;
    case Op::kWait:
    case Op::kMultiGet:
      r.keys = in.strs();
      r.number = in.i64();
      r.wait_any = r.op == Op::kWait && (f.header.flags & kFlagWaitAny) != 0;
      r.with_value = r.wait_any && (f.header.flags & kFlagWithValue) != 0;
      break;
    case Op::kCheck: r.keys = in.strs(); break;
    case Op::kDelete:
    case Op::kRoster: r.keys.push_back(in.str()); break;
    case Op::kHeartbeat:
      r.number = in.i64();
      r.value = in.str();
      r.with_value = (f.header.flags & kFlagWithValue) != 0;
      break;
    case Op::kMember:
    case Op::kRelayJoin:
    case Op::kRelayLeave:
      r.keys.push_back(in.str());
      r.number = in.i64();
      break;
    case Op::kMultiSet:
      r.keys = in.strs();
      r.values = in.strs();
      if (r.values.size() != r.keys.size()) {
        in.bad(concat("MULTI_SET has ", r.keys.size(), " keys but ", r.values.size(), " values"));
      }
      break;
    default: in.bad("unknown opcode");
  }
  in.end();
  return r;
}

Reply decode_reply(const Frame& f) {
  Reader in(f, "reply");
  if (!(f.header.flags & kFlagReply)) in.bad("the reply flag is not set");
  Reply r;
  r.op = f.header.op;
  r.id = f.header.id;
  auto status = static_cast<int32_t>(in.u32());
  if (!is_status(status)) in.bad(concat("status ", status, " is not a tutti status"));
  r.status = static_cast<Status>(status);
  r.message = in.str();
  if (r.status == Status::kOk) {
    switch (r.op) {
      case Op::kHello:
        r.number = in.i64();
        r.values.push_back(in.str());
        r.max_frame_bytes = in.i64();
        r.values.push_back(in.str());
        break;
      case Op::kHeartbeat:
        if (f.header.flags & kFlagWithValue) {
          r.with_value = true;
          r.values.push_back(in.str());
        }
        break;
      case Op::kSet:
      case Op::kMember:
      case Op::kRelayJoin:
      case Op::kRelayLeave:
      case Op::kMultiSet: break;
      case Op::kGet:
      case Op::kCompareSet: r.values.push_back(in.str()); break;
      case Op::kAdd:
      case Op::kDelete: r.number = in.i64(); break;
      case Op::kWait:
        r.number = in.i64();
        if (f.header.flags & kFlagWithValue) {
          r.with_value = true;
          r.values.push_back(in.str());
        }
        break;
      case Op::kCheck: {
        std::string bytes = in.str();
        r.flags.reserve(bytes.size());
        for (char c : bytes) {
          if (c != 0 && c != 1) in.bad("a CHECK flag byte is neither 0 nor 1");
          r.flags.push_back(c == 1);
        }
        break;
      }
      case Op::kMultiGet:
      case Op::kRoster: r.values = in.strs(); break;
      default: in.bad("unknown opcode");
    }
  }
  in.end();
  return r;
}

void Decoder::check_header() const {
  Header h = parse_header(std::string_view(buffer_).substr(offset_, kHeaderBytes));
  if (h.version != kVersion) {
    throw ProtocolError(concat("protocol version ", static_cast<int>(h.version), ", expected ",
                               static_cast<int>(kVersion),
                               " (is the peer a tutti store of another release, "
                               "or not a tutti store at all?)"));
  }
  if (!is_known_op(static_cast<uint8_t>(h.op))) {
    throw ProtocolError(concat("unknown opcode ", static_cast<int>(static_cast<uint8_t>(h.op))));
  }
  uint64_t total = static_cast<uint64_t>(h.body_bytes) + kHeaderBytes;
  if (total > max_frame_bytes_) {
    throw ProtocolError(concat("a ", op_name(h.op), " frame of ", total, " bytes is over the limit of ",
                               max_frame_bytes_, " bytes (max_frame_bytes)"));
  }
}

void Decoder::feed(const char* data, size_t size) {
  // Drop consumed bytes once they are the bigger part, so the buffer stays O(frame).
  if (offset_ > 0 && offset_ >= buffer_.size() / 2) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  buffer_.append(data, size);
  if (buffered() >= kHeaderBytes) check_header();
}

std::optional<Frame> Decoder::next() {
  if (buffered() < kHeaderBytes) return std::nullopt;
  check_header();
  Header h = parse_header(std::string_view(buffer_).substr(offset_, kHeaderBytes));
  if (buffered() - kHeaderBytes < h.body_bytes) return std::nullopt;
  Frame f;
  f.header = h;
  f.body = buffer_.substr(offset_ + kHeaderBytes, h.body_bytes);
  offset_ += kHeaderBytes + h.body_bytes;
  if (offset_ == buffer_.size()) {
    // Emptied: a buffer that held a big frame is let go, not kept for the connection's
    // life (10,000 idle connections would each keep their largest frame).
    if (buffer_.capacity() > kKeptBufferBytes) {
      std::string().swap(buffer_);
    } else {
      buffer_.clear();
    }
    offset_ = 0;
  }
  return f;
}

}  // namespace tutti::store::protocol
