// Where a communicator finds a call's buffers: the values of tutti.h's tutti_memory.
#pragma once

#include <cstdint>

namespace tutti::device {

enum class Memory : int32_t {
  kAuto = 0,    // from each pointer (cudaPointerGetAttributes), where CUDA is loaded
  kHost = 1,    // always host memory: no check at all
  kDevice = 2,  // always CUDA device memory
};

}  // namespace tutti::device
