// NCCL, loaded at run time (dlopen of libnccl.so.2) for the same reason as the CUDA
// runtime (cuda_api.h): libtutti.so has no hard dependency on it.
#pragma once

#include <nccl.h>

#include <string>

namespace tutti::device::nccl {

struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion;
  decltype(&::ncclGetUniqueId) GetUniqueId;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig;
  decltype(&::ncclCommSplit) CommSplit;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&::ncclCommAbort) CommAbort;
  decltype(&::ncclCommFinalize) CommFinalize;
  decltype(&::ncclCommDestroy) CommDestroy;
  decltype(&::ncclGetErrorString) GetErrorString;
  decltype(&::ncclGetLastError) GetLastError;
  decltype(&::ncclAllReduce) AllReduce;
  decltype(&::ncclReduce) Reduce;
  decltype(&::ncclBroadcast) Broadcast;
  decltype(&::ncclAllGather) AllGather;
  decltype(&::ncclReduceScatter) ReduceScatter;
  decltype(&::ncclSend) Send;
  decltype(&::ncclRecv) Recv;
  decltype(&::ncclGroupStart) GroupStart;
  decltype(&::ncclGroupEnd) GroupEnd;
  int version = 0;  // ncclGetVersion's code

  // "ncclAllReduce: unhandled cuda error (...); NCCL's last error: ..." for messages.
  std::string describe(const char* call, ncclResult_t result, ncclComm_t comm) const;
  // Throws Error(kTransport) "<what>: <describe>" unless result is ncclSuccess or
  // ncclInProgress (a non-blocking communicator's normal answer).
  void check(ncclResult_t result, const char* call, const std::string& what, ncclComm_t comm) const;
};

// The process's NCCL, loaded on first use; nullptr with *why_not set where it cannot
// be. Thread-safe; tried once per process.
const NcclApi* nccl_api(std::string* why_not);

}  // namespace tutti::device::nccl
