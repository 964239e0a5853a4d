// file:///PATH: ranks meet through a file on a file system they all see, as in the
// tutorials. Rank 0 serves the store and writes its address into the file; the others
// read the file and connect. The file is only a signpost: every key lives in the
// store, so the file system sees one write and a few reads per rank, not one per key.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/loop/loop.h"
#include "runtime/store/client.h"

namespace tutti::rendezvous {

// Writes "tutti-store 1 HOST PORT" to path atomically (a temporary file renamed over
// it), replacing whatever an earlier job left there. Throws Error(kTransport) naming
// the path and the reason when it cannot.
void publish_store_address(const std::string& path, const std::string& host, uint16_t port);

// Reads the address from path, waiting for the file to appear, and connects. A file
// left by an earlier job names a store that is gone: the connection is refused, and
// the file is read again until rank 0 has replaced it, or the deadline passes.
// host and port receive the address it connected to. secret: the job's, as for
// store::Client::connect; a store that denies it may be an earlier job's, so it is
// also read again. cancelled: as for store::Client::connect, also asked between reads.
std::unique_ptr<store::Client> connect_through_file(const std::shared_ptr<loop::Loop>& loop, const std::string& path,
                                                    Deadline deadline, const std::string& secret, std::string* host,
                                                    uint16_t* port, const std::function<bool()>& cancelled = {});

}  // namespace tutti::rendezvous
