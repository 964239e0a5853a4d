// `tutti trace`: merge, show or draw the trace files of a job (docs/trace.md).
#pragma once

#include <span>
#include <string>

namespace tutti::observe {

// args: what follows "trace". Returns the exit status: 0, 1 when a file cannot be read
// or written, 2 for bad arguments.
int run_trace(std::span<const std::string> args);

}  // namespace tutti::observe
