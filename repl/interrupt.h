// Ctrl-C in the REPL. The terminal's SIGINT reaches rank 0, which shares the
// launcher's process group, and tutti launch passes it on to the other ranks. What it
// does depends on what the REPL is doing when it arrives:
//   reading a line (rank 0): cancels the line; reading_fd() becomes readable;
//   running a statement: its Lua code stops at the next instruction ("interrupted!"),
//     and a watcher thread aborts the communicator given to abort_on_interrupt 200 ms
//     later (once every rank has its SIGINT: interrupt.cc), so that a rank blocked in
//     one of its collectives gets out (TUTTI_ERR_ABORTED);
//   anything else, such as the REPL's own traffic: nothing, since the statement it
//     was meant for has ended.
// A second SIGINT during the same statement ends the process, as in lua.c, for a
// statement stuck where neither the hook nor the abort reaches it.
#pragma once

#include <lua.hpp>

#include "tutti.h"

namespace tutti::repl {

class Interrupts {
 public:
  // Installs the SIGINT handler for L and starts the watcher; one per process. Throws
  // std::system_error when a pipe or the thread cannot be made.
  explicit Interrupts(lua_State* L);
  // Stops the watcher and puts back SIGINT's default action.
  ~Interrupts();
  Interrupts(const Interrupts&) = delete;
  Interrupts& operator=(const Interrupts&) = delete;

  // The communicator to abort when a statement is interrupted; nullptr for none.
  // Set it to nullptr before destroying that communicator.
  void abort_on_interrupt(tutti_comm* comm);

  // Around rank 0's reading of a line. begin_reading forgets earlier Ctrl-Cs.
  void begin_reading();
  void end_reading();
  int reading_fd() const;

  // Around a statement. end_statement says whether it was interrupted, and returns
  // only once the abort that the interruption asked for has been made.
  void begin_statement();
  bool end_statement();
};

}  // namespace tutti::repl
