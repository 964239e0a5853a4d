// The loopback port that tutti launch gives torch's store (MASTER_PORT), held for the
// job: rank 0 of a torch.distributed script binds it, in its own time, after the
// launcher chose it. (The launcher's own store listens elsewhere, at TUTTI_ADDR, which
// tutti reads first.) A port that was only free when chosen could meanwhile be chosen
// by another launcher or test started in the same moment: CI once ran two torch tests
// at once, and the ranks of one found the other's store on their MASTER_PORT, which
// denied them for its secret, while their rank 0 could not bind it.
//
// So the launcher keeps it bound (not listening), with SO_REUSEADDR set after the
// bind: another chooser's probe, a bind without SO_REUSEADDR, finds it taken, while
// torch's TCPStore, which sets SO_REUSEADDR, still binds and listens there (Linux lets
// a socket with SO_REUSEADDR bind beside others that have it and do not listen).
#pragma once

#include <cstdint>

namespace tutti::launcher {

class HeldPort {
 public:
  // Chooses a port below Linux's ephemeral range (32768 and up: as torchrun's 29500,
  // no outgoing connection takes it) that nothing has bound, and holds it; port() is 0
  // when none could be had, and the job runs without MASTER_PORT.
  static HeldPort for_torch_store();

  HeldPort() = default;
  ~HeldPort();
  HeldPort(HeldPort&& other) noexcept;
  HeldPort& operator=(HeldPort&& other) noexcept;
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;

  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;  // close-on-exec: the ranks do not inherit it
  uint16_t port_ = 0;
};

}  // namespace tutti::launcher
