#include "repl/control_channel.h"

#include <cstdint>
#include <cstring>

#include "bindings/lua/status.h"

namespace tutti::repl {
namespace {

enum ChunkKind : int64_t { kEndOfSession = 0, kChunk = 1 };
constexpr int32_t kReportTag = 1;

// A report's output and pictures travel as one string: each part is its length (8
// bytes, in this machine's order: every rank runs the same build) then its bytes.
void append_part(std::string& wire, const std::string& part) {
  uint64_t length = part.size();
  wire.append(reinterpret_cast<const char*>(&length), sizeof length);
  wire += part;
}

std::string encode(const Report& report) {
  std::string wire;
  append_part(wire, report.output);
  for (const std::string& picture : report.pictures) append_part(wire, picture);
  return wire;
}

void decode(const std::string& wire, std::string* output, std::vector<std::string>* pictures) {
  size_t at = 0;
  for (bool first = true; at + sizeof(uint64_t) <= wire.size(); first = false) {
    uint64_t length = 0;
    std::memcpy(&length, wire.data() + at, sizeof length);
    at += sizeof length;
    std::string part = wire.substr(at, length);
    at += part.size();
    if (first) {
      *output = std::move(part);
    } else {
      pictures->push_back(std::move(part));
    }
  }
}

}  // namespace

ControlChannel::ControlChannel(tutti_comm* control) : control_(control) {
  tutti_comm_rank(control, &rank_);
  tutti_comm_size(control, &size_);
}

void ControlChannel::check(tutti_status status, const char* what) {
  if (status == TUTTI_OK) return;
  throw ControlError(std::string("the REPL's own ") + what + " between ranks failed, so it cannot go on: " +
                     tutti_status_name(status) + ": " + tutti::lua::in_lua_terms(tutti_last_error()));
}

std::optional<std::string> ControlChannel::share_chunk(const std::optional<std::string>& chunk) {
  // The length goes first, so that every rank can make room for the text.
  int64_t header[2] = {chunk ? kChunk : kEndOfSession, chunk ? static_cast<int64_t>(chunk->size()) : 0};
  check(tutti_broadcast(control_, header, header, 2, TUTTI_DTYPE_INT64, 0, nullptr), "broadcast of the next line");
  if (header[0] == kEndOfSession) return std::nullopt;
  std::string text = rank_ == 0 ? *chunk : std::string(static_cast<size_t>(header[1]), '\0');
  if (!text.empty()) {
    check(tutti_broadcast(control_, text.data(), text.data(), text.size(), TUTTI_DTYPE_UINT8, 0, nullptr),
          "broadcast of the next line");
  }
  return text;
}

ControlChannel::Gathered ControlChannel::gather(const Report& mine) {
  // Every rank learns every rank's report length and failure flag; then each report
  // travels to rank 0 alone, at its own length.
  std::string wire = encode(mine);
  std::vector<int64_t> facts(2 * static_cast<size_t>(size_));
  int64_t own[2] = {static_cast<int64_t>(wire.size()), (mine.comm_failed ? 1 : 0) | (mine.world_ended ? 2 : 0)};
  check(tutti_all_gather(control_, own, facts.data(), 2, TUTTI_DTYPE_INT64, nullptr), "gathering of the results");
  Gathered gathered;
  for (int32_t rank = 0; rank < size_; ++rank) {
    if (facts[2 * rank + 1] & 1) gathered.comm_failed.push_back(rank);
    if (facts[2 * rank + 1] & 2) gathered.world_ended.push_back(rank);
  }
  if (rank_ != 0) {
    check(tutti_send(control_, wire.data(), wire.size(), TUTTI_DTYPE_UINT8, 0, kReportTag, nullptr),
          "sending of the results");
    return gathered;
  }
  gathered.outputs.resize(static_cast<size_t>(size_));
  gathered.pictures.resize(static_cast<size_t>(size_));
  for (int32_t rank = 0; rank < size_; ++rank) {
    if (rank != 0) {
      wire.assign(static_cast<size_t>(facts[2 * rank]), '\0');
      check(tutti_recv(control_, wire.data(), wire.size(), TUTTI_DTYPE_UINT8, rank, kReportTag, nullptr),
            "receiving of the results");
    }
    decode(wire, &gathered.outputs[rank], &gathered.pictures[rank]);
  }
  return gathered;
}

}  // namespace tutti::repl
