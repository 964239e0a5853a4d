// Slurm's hostlist syntax, expanded: "gpu[01-03,07],cpu5" is gpu01 gpu02 gpu03 gpu07 cpu5.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tutti::rendezvous {

// Expands a Slurm hostlist, keeping order and zero padding. Supports several ranges
// in one bracket, several brackets in one name ("r[1-2]n[01-02]" is r1n01 r1n02
// r2n01 r2n02), suffixes after a bracket, and commas between names.
// Throws Error(kInvalidArgument) naming the text and the position of the fault for
// an unbalanced bracket, a bad range (3-1, a-b), an empty name, or an expansion of
// more than max_hosts names.
std::vector<std::string> expand_hostlist(std::string_view text, size_t max_hosts = 1u << 20);

// The first name only, without expanding the rest (cheap for 100k-node lists).
std::string first_host(std::string_view text);

}  // namespace tutti::rendezvous
