#include "runtime/collectives/fingerprint.h"

#include <cstring>
#include <string>

#include "runtime/collectives/algorithms.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::collectives {
namespace {

struct Fingerprint {
  uint32_t kind;
  uint32_t seq;
  uint64_t count;
  int32_t dtype;
  int32_t op;
  int32_t root;
  uint32_t reserved;
};
static_assert(sizeof(Fingerprint) == 32);

Fingerprint fingerprint_of(const Call& call, uint32_t seq) {
  Fingerprint print{};
  print.kind = static_cast<uint32_t>(call.kind);
  print.seq = seq;
  // Fields a collective does not use are left 0, so they never cause a false alarm.
  // all_to_allv's count is what this rank sends, which differs between ranks; its
  // blocks' sizes are checked as they arrive.
  if (call.kind != Kind::kBarrier) {
    if (call.kind != Kind::kAllToAllV) print.count = call.count;
    print.dtype = call.dtype;
  }
  if (is_reducing(call.kind)) print.op = call.op;
  if (has_root(call.kind)) print.root = call.root;
  return print;
}

}  // namespace

uint16_t folded_fingerprint(const Call& call) {
  const Fingerprint print = fingerprint_of(call, 0);
  // Each field times its own odd constant, so that every field's change changes the
  // sum; the products are independent of one another, where a chain of rounds made
  // every call wait for four multiplications in a row. The top bits of one more
  // product, where every bit of the sum has reached, are the check.
  const uint64_t sum = print.kind * 0x9E3779B97F4A7C15ull + print.count * 0xff51afd7ed558ccdull +
                       static_cast<uint32_t>(print.dtype) * 0xc4ceb9fe1a85ec53ull +
                       static_cast<uint32_t>(print.op) * 0xd6e8feb86659fd93ull +
                       static_cast<uint32_t>(print.root) * 0xa0761d6478bd642full;
  return static_cast<uint16_t>((sum * 0xe7037ed1a0b428dbull) >> (64 - transport::kCheckBits));
}

namespace {

std::string describe(const Fingerprint& print) {
  Kind kind = static_cast<Kind>(print.kind);
  std::string text = concat(kind_name(kind), " #", print.seq);
  if (kind != Kind::kBarrier && kind != Kind::kAllToAllV) text += concat(" count=", print.count);
  if (kind != Kind::kBarrier) text += concat(" dtype=", dtype_name(static_cast<Dtype>(print.dtype)));
  if (is_reducing(kind)) text += concat(" op=", reduce_op_name(static_cast<ReduceOp>(print.op)));
  if (has_root(kind)) text += concat(" root=", print.root);
  return text;
}

std::string differing_fields(const Fingerprint& a, const Fingerprint& b) {
  std::string fields;
  auto add = [&](bool differs, const char* name) {
    if (differs) fields += fields.empty() ? name : concat(", ", name);
  };
  add(a.kind != b.kind, "collective");
  add(a.seq != b.seq, "sequence number");
  add(a.count != b.count, "count");
  add(a.dtype != b.dtype, "dtype");
  add(a.op != b.op, "op");
  add(a.root != b.root, "root");
  return fields;
}

}  // namespace

void verify_fingerprints(transport::Transport& transport, const OpContext& context, const Call& call) {
  int size = transport.size();
  if (size == 1) return;
  Fingerprint mine = fingerprint_of(call, context.seq);
  auto* all = static_cast<Fingerprint*>(context.scratch->get(3, sizeof(Fingerprint) * size));
  {
    // Unchecked: the exchange that names the fields must not itself fail on them.
    OpContext unchecked = context;
    unchecked.call_check = 0;
    Exchange exchange(transport, unchecked);
    all_gather_bruck(exchange, &mine, all, sizeof(Fingerprint));
  }
  // Every rank holds the same table, so every rank reaches the same verdict: group
  // the ranks by fingerprint and report against rank 0's.
  std::string report;
  std::string fields;
  for (int rank = 1; rank < size; ++rank) {
    if (std::memcmp(&all[rank], &all[0], sizeof(Fingerprint)) == 0) continue;
    if (fields.empty()) fields = differing_fields(all[0], all[rank]);
    if (!report.empty()) report += "; ";
    report += concat("rank ", rank, " called ", describe(all[rank]));
  }
  if (report.empty()) return;
  fail(Status::kMismatch,
       concat(context.label(), ": the ranks called different collectives (TUTTI_CHECK): rank 0 called ",
              describe(all[0]), "; ", report, ". They differ in: ", fields,
              ". Every rank must make the same calls in the same order with the same ", "count, dtype, op and root"));
}

}  // namespace tutti::collectives
