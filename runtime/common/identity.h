// How this process is named to others: in rendezvous messages, store handshakes and logs.
#pragma once

#include <string>

namespace tutti {

// This machine's hostname; "localhost" when it cannot be read.
std::string hostname();
// "host:pid".
std::string process_identity();

}  // namespace tutti
