// Writes the seed corpus of fuzz_store_protocol: one request of each op, one OK reply
// and one error reply of each op, and a stream of several frames, each file prefixed
// with the fuzzer's three control bytes. Ops come from is_known_op, so rerunning it
// after an op is added seeds that op too:
//   build/fuzz/make_store_protocol_seeds tests/fuzz/corpus/store_protocol
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "runtime/store/protocol.h"

namespace protocol = tutti::store::protocol;

namespace {

// Chunk seed 7 (pieces of 1..14 bytes), max_frame_bytes 12 + 16 * 0xffff.
const std::string kControl = "\x07\xff\xff";

void write(const std::string& dir, const std::string& name, const std::string& stream) {
  std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out << kControl << stream;
  if (!out) throw std::runtime_error("cannot write " + path);
}

protocol::Request request_of(protocol::Op op) {
  protocol::Request request;
  request.op = op;
  request.id = 7;
  request.keys = {"rank/0", "rank/1"};  // ops with one key send the first
  request.value = "value";
  request.values = {"0 2 0", "1 2 0"};  // MULTI_SET: one per key
  request.expected = "expected";
  request.number = 30000;
  request.wait_any = op == protocol::Op::kWait;
  return request;
}

protocol::Reply reply_of(protocol::Op op, tutti::Status status) {
  protocol::Reply reply;
  reply.op = op;
  reply.id = 7;
  reply.status = status;
  reply.message = status == tutti::Status::kOk ? "" : "timed out after 30000 ms waiting for rank/1";
  reply.values = {"host:29500", ""};  // HELLO: server, challenge; GET: the first
  reply.flags = {true, false};
  reply.number = 1;
  reply.max_frame_bytes = 1 << 20;
  return reply;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY (such as tests/fuzz/corpus/store_protocol)\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  std::string stream;
  for (int value = 0; value < 256; ++value) {
    if (!protocol::is_known_op(static_cast<uint8_t>(value))) continue;
    auto op = static_cast<protocol::Op>(value);
    std::string name = protocol::op_name(op);
    try {
      std::string request = protocol::encode(request_of(op));
      std::string ok = protocol::encode(reply_of(op, tutti::Status::kOk));
      std::string error = protocol::encode(reply_of(op, tutti::Status::kTimeout));
      write(dir, "request_" + name, request);
      write(dir, "reply_ok_" + name, ok);
      write(dir, "reply_error_" + name, error);
      stream += request + ok;
    } catch (const std::exception& error) {
      // An op whose encoder wants fields this generic message lacks: say so, and seed
      // it by hand.
      std::fprintf(stderr, "%s: no seed for %s: %s\n", argv[0], name.c_str(), error.what());
    }
  }
  write(dir, "stream_of_every_op", stream);
  return 0;
}
