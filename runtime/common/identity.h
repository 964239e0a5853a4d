// How this process is named to others: in rendezvous messages, store handshakes and logs.
#pragma once

#include <string>

namespace tutti {

// This machine's hostname; "localhost" when it cannot be read.
std::string hostname();
// "host:pid".
std::string process_identity();
// This kernel's boot id (/proc/sys/kernel/random/boot_id): processes with the same one
// run on one machine, containers included, and share its CPUs; "" when unreadable.
std::string kernel_boot_id();

}  // namespace tutti
