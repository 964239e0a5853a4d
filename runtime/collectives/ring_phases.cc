#include "runtime/collectives/ring_phases.h"

#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

const void* ring_reduce_scatter(Exchange& x, const void* send, void* into, const Blocks& blocks, Dtype dtype,
                                ReduceOp op) {
  const int size = x.size();
  const int rank = x.rank();
  if (size == 1) {
    if (into == nullptr) return send;
    copy_bytes(into, send, blocks.bytes(0));
    return into;
  }
  Scratch& scratch = *x.context().scratch;
  char* incoming = static_cast<char*>(scratch.get(0, blocks.max_bytes()));
  // Two ranks need no outgoing buffer when the result has a place: the only step
  // sends this rank's own data and ends with its own block.
  char* outgoing = size > 2 || into == nullptr ? static_cast<char*>(scratch.get(1, blocks.max_bytes())) : nullptr;
  const int left = ring_index(rank - 1, size);
  const int right = ring_index(rank + 1, size);

  // Step s sends block rank - s - 1 (this rank's own data in step 0, then what it
  // reduced in step s - 1) and receives block rank - s - 2, partly reduced by the
  // ranks to the left; the last step's block is this rank's own.
  const void* to_send = byte_at(send, blocks.offset(ring_index(rank - 1, size)));
  for (int step = 0; step < size - 1; ++step) {
    const int send_block = ring_index(rank - step - 1, size);
    const int recv_block = ring_index(rank - step - 2, size);
    x.recv(left, incoming, blocks.bytes(recv_block));
    x.send(right, to_send, blocks.bytes(send_block));
    x.wait();
    const bool last = step == size - 2;
    void* result = last && into != nullptr ? into : outgoing;
    reduce_into(result, byte_at(send, blocks.offset(recv_block)), incoming, blocks.elements(recv_block), dtype, op);
    to_send = outgoing;
  }
  return into != nullptr ? into : outgoing;
}

void ring_all_gather(Exchange& x, void* buffer, const Blocks& blocks, int shift, const void* own) {
  const int size = x.size();
  const int rank = x.rank();
  const int left = ring_index(rank - 1, size);
  const int right = ring_index(rank + 1, size);
  const int own_block = ring_index(rank + shift, size);
  void* own_place = byte_at(buffer, blocks.offset(own_block));
  if (own != nullptr && size == 1) copy_bytes(own_place, own, blocks.bytes(own_block));
  // Step s passes on the block received in step s - 1 (in step 0, this rank's own).
  for (int step = 0; step < size - 1; ++step) {
    const int send_block = ring_index(rank + shift - step, size);
    const int recv_block = ring_index(rank + shift - step - 1, size);
    const bool from_own = step == 0 && own != nullptr;
    x.recv(left, byte_at(buffer, blocks.offset(recv_block)), blocks.bytes(recv_block));
    x.send(right, from_own ? own : byte_at(buffer, blocks.offset(send_block)), blocks.bytes(send_block));
    if (from_own) copy_bytes(own_place, own, blocks.bytes(own_block));
    x.wait();
  }
}

}  // namespace tutti::collectives
