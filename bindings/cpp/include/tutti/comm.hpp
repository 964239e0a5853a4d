// tutti/comm.hpp: a communicator, owning its tutti_comm, and every call of tutti.h on it.
//
// The calls keep the C names and argument order, each (pointer, count, dtype) becoming
// a Buffer, so that a container is passed as it is. The count comes from the buffer
// every rank uses: send for all_reduce, reduce, all_gather and gather; recv for
// broadcast, reduce_scatter, scatter and recv; send.size() / comm.size() for all_to_all;
// all_to_allv takes a count per rank on each side.
// The other buffer, where this rank uses it and it has memory, must have the same
// element type and as many elements as the C call reads or writes, or the call throws
// InvalidArgumentError before anything is sent. A buffer this rank does not use (recv of
// reduce and gather, send of broadcast and scatter, off the root) may be tutti::Buffer{}.
// Each call blocks and throws the operation's error; its _async form returns a Work at
// once, and the buffers belong to the operation until that Work has finished.
//
// A Work keeps its communicator alive: the tutti_comm is destroyed when the Comm and
// every Work of its operations are gone, whatever order they go in. Destroying it can
// block: the rank that hosts the rendezvous store (rank 0, unless tutti launch serves
// it) waits, up to the init timeout, for the other ranks to destroy theirs, and says so
// on stderr after 2 s; call destroy() to choose where that happens.
#ifndef TUTTI_CPP_COMM_HPP
#define TUTTI_CPP_COMM_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "tutti.h"
#include "tutti/buffer.hpp"
#include "tutti/config.hpp"
#include "tutti/error.hpp"
#include "tutti/work.hpp"

namespace tutti {

class Comm {
 public:
  // No communicator, as after a move, or on a rank that split with TUTTI_UNDEFINED.
  Comm() noexcept = default;
  // Takes ownership of comm, from a C call made by hand.
  explicit Comm(tutti_comm* comm) : comm_(own(comm)) {}

  // Joins the job: tutti_comm_init. Collective over every rank of the job.
  static Comm init(const Config& config = Config()) {
    const tutti_config c_config = config.c_config();
    tutti_comm* comm = nullptr;
    check(tutti_comm_init(&c_config, &comm));
    return Comm(comm);
  }
  // Joins a running job as a new rank: tutti_comm_join. Waits for the job's ranks to
  // grow(); config's rank and world size must stay -1.
  static Comm join(const Config& config = Config()) {
    const tutti_config c_config = config.c_config();
    tutti_comm* comm = nullptr;
    check(tutti_comm_join(&c_config, &comm));
    return Comm(comm);
  }

  // Move-only; moving or destroying a Comm lets go of its communicator, which is
  // destroyed once no Work of it is left either.
  Comm(Comm&&) noexcept = default;
  Comm& operator=(Comm&&) noexcept = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm() = default;

  // Lets go of the communicator now, leaving this Comm empty (see the top of this file
  // for how long the destruction may take, once no Work holds it).
  void destroy() noexcept { comm_.reset(); }

  explicit operator bool() const noexcept { return comm_ != nullptr; }
  tutti_comm* get() const noexcept { return comm_.get(); }

  int32_t rank() const { return place(tutti_comm_rank); }
  int32_t size() const { return place(tutti_comm_size); }
  int32_t local_rank() const { return place(tutti_comm_local_rank); }
  int32_t local_size() const { return place(tutti_comm_local_size); }
  int32_t node_rank() const { return place(tutti_comm_node_rank); }

  // An empty Comm on a rank that passes color TUTTI_UNDEFINED.
  Comm split(int32_t color, int32_t key) {
    tutti_comm* out = nullptr;
    check(tutti_comm_split(comm_.get(), color, key, &out));
    return Comm(out);
  }
  Comm shrink() {
    tutti_comm* out = nullptr;
    check(tutti_comm_shrink(comm_.get(), &out));
    return Comm(out);
  }
  // These ranks, keeping their numbers, and the next count joiners (join()): tutti_comm_grow.
  Comm grow(int32_t count) {
    tutti_comm* out = nullptr;
    check(tutti_comm_grow(comm_.get(), count, &out));
    return Comm(out);
  }
  void set_op_timeout(std::chrono::milliseconds timeout) {
    check(tutti_comm_set_op_timeout(comm_.get(), timeout.count()));
  }
  void dump(int fd = 2) const { check(tutti_comm_dump(comm_.get(), fd)); }
  // Any thread, any time: fails every pending and later operation with AbortedError.
  void abort() { check(tutti_comm_abort(comm_.get())); }

  // ---- collectives

  void all_reduce(ConstBuffer send, Buffer recv, tutti_op op) { check(all_reduce_call(send, recv, op, nullptr)); }
  [[nodiscard]] Work all_reduce_async(ConstBuffer send, Buffer recv, tutti_op op) {
    return start([&](tutti_work** work) { return all_reduce_call(send, recv, op, work); });
  }
  // In place, as torch.distributed's all_reduce(tensor).
  void all_reduce(Buffer data, tutti_op op) { all_reduce(data, data, op); }
  [[nodiscard]] Work all_reduce_async(Buffer data, tutti_op op) { return all_reduce_async(data, data, op); }

  void reduce(ConstBuffer send, Buffer recv, tutti_op op, int32_t root) {
    check(reduce_call(send, recv, op, root, nullptr));
  }
  [[nodiscard]] Work reduce_async(ConstBuffer send, Buffer recv, tutti_op op, int32_t root) {
    return start([&](tutti_work** work) { return reduce_call(send, recv, op, root, work); });
  }
  void reduce(Buffer data, tutti_op op, int32_t root) { reduce(data, data, op, root); }
  [[nodiscard]] Work reduce_async(Buffer data, tutti_op op, int32_t root) { return reduce_async(data, data, op, root); }

  void broadcast(ConstBuffer send, Buffer recv, int32_t root) { check(broadcast_call(send, recv, root, nullptr)); }
  [[nodiscard]] Work broadcast_async(ConstBuffer send, Buffer recv, int32_t root) {
    return start([&](tutti_work** work) { return broadcast_call(send, recv, root, work); });
  }
  void broadcast(Buffer data, int32_t root) { broadcast(data, data, root); }
  [[nodiscard]] Work broadcast_async(Buffer data, int32_t root) { return broadcast_async(data, data, root); }

  void all_gather(ConstBuffer send, Buffer recv) { check(all_gather_call(send, recv, nullptr)); }
  [[nodiscard]] Work all_gather_async(ConstBuffer send, Buffer recv) {
    return start([&](tutti_work** work) { return all_gather_call(send, recv, work); });
  }

  void reduce_scatter(ConstBuffer send, Buffer recv, tutti_op op) {
    check(reduce_scatter_call(send, recv, op, nullptr));
  }
  [[nodiscard]] Work reduce_scatter_async(ConstBuffer send, Buffer recv, tutti_op op) {
    return start([&](tutti_work** work) { return reduce_scatter_call(send, recv, op, work); });
  }

  void gather(ConstBuffer send, Buffer recv, int32_t root) { check(gather_call(send, recv, root, nullptr)); }
  [[nodiscard]] Work gather_async(ConstBuffer send, Buffer recv, int32_t root) {
    return start([&](tutti_work** work) { return gather_call(send, recv, root, work); });
  }

  void scatter(ConstBuffer send, Buffer recv, int32_t root) { check(scatter_call(send, recv, root, nullptr)); }
  [[nodiscard]] Work scatter_async(ConstBuffer send, Buffer recv, int32_t root) {
    return start([&](tutti_work** work) { return scatter_call(send, recv, root, work); });
  }

  void all_to_all(ConstBuffer send, Buffer recv) { check(all_to_all_call(send, recv, nullptr)); }
  [[nodiscard]] Work all_to_all_async(ConstBuffer send, Buffer recv) {
    return start([&](tutti_work** work) { return all_to_all_call(send, recv, work); });
  }

  // Blocks of their own sizes (tutti_all_to_allv): send_counts[j] elements to rank j,
  // recv_counts[i] from rank i, each side's blocks packed in rank order; one count per
  // rank, and each side's counts must add up to its buffer's size.
  void all_to_allv(ConstBuffer send, const std::vector<size_t>& send_counts, Buffer recv,
                   const std::vector<size_t>& recv_counts) {
    check(all_to_allv_call(send, send_counts, recv, recv_counts, nullptr));
  }
  [[nodiscard]] Work all_to_allv_async(ConstBuffer send, const std::vector<size_t>& send_counts, Buffer recv,
                                       const std::vector<size_t>& recv_counts) {
    return start([&](tutti_work** work) { return all_to_allv_call(send, send_counts, recv, recv_counts, work); });
  }

  void barrier() { check(tutti_barrier(comm_.get(), nullptr)); }
  [[nodiscard]] Work barrier_async() {
    return start([&](tutti_work** work) { return tutti_barrier(comm_.get(), work); });
  }

  // ---- point to point: recv accepts a message of at most data.size() elements.

  void send(ConstBuffer data, int32_t peer, int32_t tag) {
    check(tutti_send(comm_.get(), data.data(), data.size(), data.dtype(), peer, tag, nullptr));
  }
  [[nodiscard]] Work send_async(ConstBuffer data, int32_t peer, int32_t tag) {
    return start([&](tutti_work** work) {
      return tutti_send(comm_.get(), data.data(), data.size(), data.dtype(), peer, tag, work);
    });
  }
  void recv(Buffer data, int32_t peer, int32_t tag) {
    check(tutti_recv(comm_.get(), data.data(), data.size(), data.dtype(), peer, tag, nullptr));
  }
  [[nodiscard]] Work recv_async(Buffer data, int32_t peer, int32_t tag) {
    return start([&](tutti_work** work) {
      return tutti_recv(comm_.get(), data.data(), data.size(), data.dtype(), peer, tag, work);
    });
  }

 private:
  template <class Read>
  int32_t place(Read read) const {
    int32_t value = 0;
    check(read(comm_.get(), &value));
    return value;
  }

  template <class Call>
  Work start(Call call) {
    tutti_work* work = nullptr;
    check(call(&work));
    return Work(work, comm_);
  }

  static std::shared_ptr<tutti_comm> own(tutti_comm* comm) {
    if (comm == nullptr) return nullptr;
    return std::shared_ptr<tutti_comm>(comm, [](tutti_comm* owned) { tutti_comm_destroy(owned); });
  }

  // Throws InvalidArgumentError unless other, where this rank uses it and it has memory,
  // has dtype and `expected` elements (`rule` says how many, for the message). A NULL
  // buffer or an empty Comm goes on to the C call, which says what it needed.
  void expect(const char* api, ConstBuffer other, const char* other_name, bool used, tutti_dtype dtype, size_t expected,
              const char* rule) const {
    if (comm_ == nullptr || !used || other.data() == nullptr) return;
    const std::string where = std::string("tutti::Comm::") + api + ": ";
    if (other.dtype() != dtype) {
      throw_error(TUTTI_ERR_INVALID_ARGUMENT, where + other_name + " is " + dtype_name(other.dtype()) +
                                                  " but the operation's dtype is " + dtype_name(dtype) +
                                                  "; give both buffers the same element type");
    }
    if (other.size() != expected) {
      throw_error(TUTTI_ERR_INVALID_ARGUMENT, where + other_name + " holds " + std::to_string(other.size()) +
                                                  " elements but must hold " + rule + " = " + std::to_string(expected) +
                                                  "; resize " + other_name);
    }
  }

  bool is(int32_t root) const { return comm_ != nullptr && rank() == root; }
  size_t ranks() const { return comm_ != nullptr ? static_cast<size_t>(size()) : 0; }

  tutti_status all_reduce_call(ConstBuffer send, Buffer recv, tutti_op op, tutti_work** work) {
    expect("all_reduce", recv, "recv", true, send.dtype(), send.size(), "send.size()");
    return tutti_all_reduce(comm_.get(), send.data(), recv.data(), send.size(), send.dtype(), op, work);
  }
  tutti_status reduce_call(ConstBuffer send, Buffer recv, tutti_op op, int32_t root, tutti_work** work) {
    expect("reduce", recv, "recv", is(root), send.dtype(), send.size(), "send.size() on the root");
    return tutti_reduce(comm_.get(), send.data(), recv.data(), send.size(), send.dtype(), op, root, work);
  }
  tutti_status broadcast_call(ConstBuffer send, Buffer recv, int32_t root, tutti_work** work) {
    expect("broadcast", send, "send", is(root), recv.dtype(), recv.size(), "recv.size() on the root");
    return tutti_broadcast(comm_.get(), send.data(), recv.data(), recv.size(), recv.dtype(), root, work);
  }
  tutti_status all_gather_call(ConstBuffer send, Buffer recv, tutti_work** work) {
    expect("all_gather", recv, "recv", true, send.dtype(), ranks() * send.size(), "comm.size() * send.size()");
    return tutti_all_gather(comm_.get(), send.data(), recv.data(), send.size(), send.dtype(), work);
  }
  tutti_status reduce_scatter_call(ConstBuffer send, Buffer recv, tutti_op op, tutti_work** work) {
    expect("reduce_scatter", send, "send", true, recv.dtype(), ranks() * recv.size(), "comm.size() * recv.size()");
    return tutti_reduce_scatter(comm_.get(), send.data(), recv.data(), recv.size(), recv.dtype(), op, work);
  }
  tutti_status gather_call(ConstBuffer send, Buffer recv, int32_t root, tutti_work** work) {
    expect("gather", recv, "recv", is(root), send.dtype(), ranks() * send.size(),
           "comm.size() * send.size() on the root");
    return tutti_gather(comm_.get(), send.data(), recv.data(), send.size(), send.dtype(), root, work);
  }
  tutti_status scatter_call(ConstBuffer send, Buffer recv, int32_t root, tutti_work** work) {
    expect("scatter", send, "send", is(root), recv.dtype(), ranks() * recv.size(),
           "comm.size() * recv.size() on the root");
    return tutti_scatter(comm_.get(), send.data(), recv.data(), recv.size(), recv.dtype(), root, work);
  }
  tutti_status all_to_all_call(ConstBuffer send, Buffer recv, tutti_work** work) {
    const size_t n = ranks();
    if (n != 0 && send.size() % n != 0) {
      throw_error(TUTTI_ERR_INVALID_ARGUMENT, "tutti::Comm::all_to_all: send holds " + std::to_string(send.size()) +
                                                  " elements, not a multiple of comm.size() " + std::to_string(n) +
                                                  "; give every rank a block of the same size");
    }
    expect("all_to_all", recv, "recv", true, send.dtype(), send.size(), "send.size()");
    return tutti_all_to_all(comm_.get(), send.data(), recv.data(), n != 0 ? send.size() / n : 0, send.dtype(), work);
  }

  tutti_status all_to_allv_call(ConstBuffer send, const std::vector<size_t>& send_counts, Buffer recv,
                                const std::vector<size_t>& recv_counts, tutti_work** work) {
    check_counts(send_counts, "send", send.size());
    check_counts(recv_counts, "recv", recv.size());
    expect("all_to_allv", recv, "recv", true, send.dtype(), recv.size(), "the sum of recv_counts");
    return tutti_all_to_allv(comm_.get(), send.data(), send_counts.data(), nullptr, recv.data(), recv_counts.data(),
                             nullptr, send.dtype(), work);
  }
  // all_to_allv's counts of one side (`side`: "send" or "recv"), for a buffer of `held`
  // elements: one per rank, adding up to it.
  void check_counts(const std::vector<size_t>& counts, const std::string& side, size_t held) const {
    const std::string where = "tutti::Comm::all_to_allv: " + side + "_counts ";
    if (comm_ != nullptr && counts.size() != ranks()) {
      throw_error(TUTTI_ERR_INVALID_ARGUMENT, where + "has " + std::to_string(counts.size()) +
                                                  " entries; pass one count per rank (" + std::to_string(ranks()) +
                                                  ")");
    }
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    if (total != held) {
      throw_error(TUTTI_ERR_INVALID_ARGUMENT, where + "add up to " + std::to_string(total) + " elements but " + side +
                                                  " holds " + std::to_string(held) + "; resize " + side);
    }
  }

  std::shared_ptr<tutti_comm> comm_;
};

}  // namespace tutti

#endif  // TUTTI_CPP_COMM_HPP
