# CUDA and NCCL are optional: the GPU transport is compiled only where both are found.
# Either way configure says so in one line.
find_package(CUDAToolkit QUIET)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib)
if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(TUTTI_HAVE_NCCL ON)
  message(STATUS "tutti: GPU support ON (CUDA ${CUDAToolkit_VERSION}, NCCL ${NCCL_LIBRARY})")
else()
  set(TUTTI_HAVE_NCCL OFF)
  message(STATUS "tutti: GPU support OFF (CUDA toolkit or NCCL not found); host-memory transports only")
endif()
