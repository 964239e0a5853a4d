// open_device_path for a build without CUDA and NCCL (cmake/cuda.cmake found none):
// no communicator ever has a device path, and asking for one says why. Compiled only
// where runtime/device/nccl is not.
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/device/device_path.h"

namespace tutti::device {

// The inherited path is taken by value, as the NCCL build's open_device_path keeps it.
std::unique_ptr<DevicePath> open_device_path(
    const DeviceSetup& setup, bool load,
    std::shared_ptr<DevicePath::Inherited>) {  // NOLINT(performance-unnecessary-value-param)
  if (!load) return nullptr;
  fail(Status::kUnsupported, concat("CUDA is not available: this libtutti was built without CUDA and NCCL (",
                                    setup.where, "); rebuild where cmake finds the CUDA toolkit and NCCL"));
}

}  // namespace tutti::device
