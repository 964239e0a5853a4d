// How rank 0 shows what every rank printed for one statement: in rank order, each
// line tagged with the ranks that printed it, ranks whose whole output is the same
// folded into one group: "[0-3] 4", or "[0,2] even" then "[1,3] odd", messages that
// differ only in naming their own rank too ("[1,3] tutti: rank 1,3 of 4: ..."); then the
// pictures that t:show() drew, side by side, rank by rank.
#pragma once

#include <string>
#include <vector>

namespace tutti::repl {

// outputs[r] is rank r's output. Ranks that printed nothing are left out; groups come
// in the order of their lowest rank. A last line without a newline gets one.
std::string group_by_rank(const std::vector<std::string>& outputs);

// pictures[r] holds rank r's pictures in the order it drew them. The i-th pictures of
// all ranks make one row, each under its rank ("rank 2"); "" when there are none.
std::string pictures_side_by_side(const std::vector<std::vector<std::string>>& pictures);

}  // namespace tutti::repl
