// Fuzzes the store's wire protocol (runtime/store/protocol.h): the Decoder that cuts a
// byte stream into frames, then decode_request and decode_reply of every frame.
//
// Input: byte 0 picks how the stream is cut into feed() calls, bytes 1-2 pick the
// Decoder's max_frame_bytes, and the rest is the stream a peer would send.
// Properties checked, beyond "no crash, no leak, no undefined behaviour":
//   - the frames, and whether a ProtocolError comes, do not depend on the chunking;
//   - every frame handed out has a known op, version 1, and fits the limit;
//   - decoding throws only ProtocolError, with a message;
//   - a request or reply that decodes re-encodes to the same body and decodes back to
//     the same fields (the decoder accepts exactly one spelling of each message).
// Only what protocol.h exports is used (is_known_op, not a list of ops), so that new
// ops are fuzzed as soon as they exist.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/store/protocol.h"
#include "tests/fuzz/fuzz_check.h"

namespace protocol = tutti::store::protocol;
using tutti::concat;
using tutti::fuzz::require;

namespace {

constexpr size_t kControlBytes = 3;

struct Outcome {
  std::vector<protocol::Frame> frames;
  bool failed = false;  // a ProtocolError ended the stream
  size_t buffered = 0;  // left in the decoder when the stream ended without one
};

// Feeds stream in pieces of the given sizes (cycled), draining next() after each.
Outcome decode_stream(const std::string& stream, size_t max_frame_bytes, const std::vector<size_t>& pieces) {
  Outcome out;
  protocol::Decoder decoder(max_frame_bytes);
  size_t pos = 0;
  size_t piece = 0;
  try {
    while (pos < stream.size()) {
      size_t size = std::min(pieces[piece++ % pieces.size()], stream.size() - pos);
      decoder.feed(stream.data() + pos, size);
      pos += size;
      while (std::optional<protocol::Frame> frame = decoder.next()) out.frames.push_back(std::move(*frame));
    }
  } catch (const protocol::ProtocolError& error) {
    require(*error.what() != '\0', "a Decoder ProtocolError has no message");
    out.failed = true;
    return out;
  }
  out.buffered = decoder.buffered();
  return out;
}

bool same_header(const protocol::Header& a, const protocol::Header& b) {
  return a.body_bytes == b.body_bytes && a.version == b.version && a.op == b.op && a.flags == b.flags && a.id == b.id;
}

bool same(const protocol::Request& a, const protocol::Request& b) {
  return a.op == b.op && a.id == b.id && a.wait_any == b.wait_any && a.keys == b.keys && a.value == b.value &&
         a.expected == b.expected && a.number == b.number;
}

bool same(const protocol::Reply& a, const protocol::Reply& b) {
  return a.op == b.op && a.id == b.id && a.status == b.status && a.message == b.message && a.values == b.values &&
         a.flags == b.flags && a.number == b.number && a.max_frame_bytes == b.max_frame_bytes;
}

// The one frame in bytes, which must be exactly one whole frame.
protocol::Frame only_frame(const std::string& bytes) {
  protocol::Decoder decoder(bytes.size());
  decoder.feed(bytes.data(), bytes.size());
  std::optional<protocol::Frame> frame = decoder.next();
  require(frame.has_value() && decoder.buffered() == 0, "an encoded message is not exactly one frame");
  return *frame;
}

// encode(message) must carry the same op, id and body as the frame it was decoded
// from, and decode back to the same fields. Flags may differ: reserved bits and a
// WAIT_ANY bit on an op other than WAIT are ignored on the way in, never sent.
template <typename Message, typename Decode>
void check_round_trip(const protocol::Frame& original, const Message& message, Decode decode) {
  std::string bytes = protocol::encode(message);
  protocol::Frame again = only_frame(bytes);
  std::string name = protocol::op_name(original.header.op);
  require(again.header.op == original.header.op && again.header.id == original.header.id,
          concat(name, ": re-encoding changed the op or the id"));
  require(again.body == original.body, concat(name, ": re-encoding changed the body (", original.body.size(),
                                              " bytes in, ", again.body.size(), " out)"));
  Message decoded = decode(again);
  require(same(message, decoded), concat(name, ": encode then decode changed a field"));
}

void check_frame(const protocol::Frame& frame, size_t max_frame_bytes) {
  const protocol::Header& header = frame.header;
  require(protocol::is_known_op(static_cast<uint8_t>(header.op)), "the Decoder handed out an unknown op");
  require(header.version == protocol::kVersion, "the Decoder handed out a frame of another version");
  require(header.body_bytes == frame.body.size(), "a frame's body is not as long as its header says");
  require(protocol::kHeaderBytes + frame.body.size() <= max_frame_bytes,
          "the Decoder handed out a frame over the limit");

  // The round trips run outside the try blocks: a ProtocolError there is a broken
  // property, not a refused frame.
  bool is_reply = (header.flags & protocol::kFlagReply) != 0;
  std::optional<protocol::Request> request;
  try {
    request = protocol::decode_request(frame);
  } catch (const protocol::ProtocolError& error) {
    require(*error.what() != '\0', "a decode_request ProtocolError has no message");
  }
  if (request) {
    require(!is_reply, "decode_request accepted a frame with the reply flag");
    check_round_trip(frame, *request, protocol::decode_request);
  }
  std::optional<protocol::Reply> reply;
  try {
    reply = protocol::decode_reply(frame);
  } catch (const protocol::ProtocolError& error) {
    require(*error.what() != '\0', "a decode_reply ProtocolError has no message");
  }
  if (reply) {
    require(is_reply, "decode_reply accepted a frame without the reply flag");
    check_round_trip(frame, *reply, protocol::decode_reply);
  }
}

// Piece sizes from a seed: 0 is one byte at a time, anything else a fixed
// pseudo-random cycle of sizes in [1, 2 * seed].
std::vector<size_t> pieces_for(uint8_t seed) {
  if (seed == 0) return {1};
  std::vector<size_t> pieces;
  uint32_t state = seed * 2654435761u;
  for (int i = 0; i < 16; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    pieces.push_back(1 + state % (2u * seed));
  }
  return pieces;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kControlBytes) return 0;
  uint8_t chunk_seed = data[0];
  // Up to about 1 MiB, down to a bare header, so that the limit itself is fuzzed too.
  size_t max_frame_bytes =
      protocol::kHeaderBytes + 16 * (static_cast<size_t>(data[1]) | (static_cast<size_t>(data[2]) << 8));
  std::string stream(reinterpret_cast<const char*>(data) + kControlBytes, size - kControlBytes);

  Outcome whole = decode_stream(stream, max_frame_bytes, {stream.size() + 1});
  Outcome cut = decode_stream(stream, max_frame_bytes, pieces_for(chunk_seed));
  require(whole.failed == cut.failed, "chunking changed whether the stream fails");
  require(whole.frames.size() == cut.frames.size(), "chunking changed how many frames came out");
  require(whole.buffered == cut.buffered, "chunking changed how many bytes stay buffered");
  for (size_t i = 0; i < whole.frames.size(); ++i) {
    require(same_header(whole.frames[i].header, cut.frames[i].header) && whole.frames[i].body == cut.frames[i].body,
            concat("chunking changed frame ", i));
  }
  for (const protocol::Frame& frame : whole.frames) check_frame(frame, max_frame_bytes);
  return 0;
}
