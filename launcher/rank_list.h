// Names a set of ranks in messages compactly, so that a 4096-rank job's "ranks still
// running" stays one readable line: "rank 3", "ranks 0-2, 5, 7-9".
#pragma once

#include <string>
#include <vector>

namespace tutti::launcher {

// ranks need not be sorted or unique. "no ranks" for an empty list.
std::string format_ranks(std::vector<int> ranks);

}  // namespace tutti::launcher
