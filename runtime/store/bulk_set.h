// Setting many keys, each to a value of its own, as a leader publishes one answer per
// rank (a meeting's places, a split's new ranks, a shrink's survivors). One request per
// key costs a round trip each (2.7 s for 16,384 keys here); one MULTI_SET of them all
// would pass the store's frame limit near 400,000. Slices of kKeysPerSet keys cost a
// handful of requests at any size.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/store/client.h"

namespace tutti::store {

constexpr size_t kKeysPerSet = 4096;

// Sets keys[i] to values[i] for every i, in MULTI_SETs of at most kKeysPerSet keys,
// in order. Each slice is whole or not at all, the whole is not: on a failure (thrown
// as Client::multi_set throws it) the slices before it stand. keys and values have
// the same size.
void set_each(Client& store, const std::vector<std::string>& keys, const std::vector<std::string>& values,
              Deadline deadline);

}  // namespace tutti::store
