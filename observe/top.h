// `tutti top`: what every rank of a running job is doing, right now, from outside it.
#pragma once

#include <span>
#include <string>

namespace tutti::observe {

// The whole command: parses the arguments that follow "top", finds the job, and
// draws it once (--once) or every interval until the job ends. Returns the exit
// status: 0, 1 when there is no job to show or its store turns us away, 2 for bad
// usage.
int top_main(std::span<const std::string> args);

}  // namespace tutti::observe
