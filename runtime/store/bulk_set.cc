#include "runtime/store/bulk_set.h"

#include <algorithm>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::store {

void set_each(Client& store, const std::vector<std::string>& keys, const std::vector<std::string>& values,
              Deadline deadline) {
  if (keys.size() != values.size()) {
    fail(Status::kInvalidArgument, concat("store set_each on ", store.address(), ": ", keys.size(), " keys but ",
                                          values.size(), " values; give one per key"));
  }
  for (size_t first = 0; first < keys.size(); first += kKeysPerSet) {
    const auto from = static_cast<ptrdiff_t>(first);
    const auto to = static_cast<ptrdiff_t>(std::min(keys.size(), first + kKeysPerSet));
    store.multi_set({keys.begin() + from, keys.begin() + to}, {values.begin() + from, values.begin() + to}, deadline);
  }
}

}  // namespace tutti::store
