// Whether this process's cores are shared with what its waits wait for, as the waits
// themselves learn it: a sched_yield that takes several times as long as a bare system
// call of this machine ran another thread or process on this core. Every wait of every
// transport (shared memory's, the collectives' waits on UCX) yields through here and
// reads the answer:
// while the core is shared they yield at once instead of spinning first, since a spin
// would keep the core from the rank it waits for (more ranks than cores, emulated
// nodes that share one machine's cores, another job on the node).
//
// And a waiting thread that keeps finding its core shared while the machine has a CPU
// to spare moves itself there (yield_core, core_sharing.cc says why).
#pragma once

#include <chrono>

namespace tutti::transport {

// Yields the core, and remembers whether the yield ran someone else; after a run of
// yields that did, may move the thread to another CPU of its affinity.
void yield_core();
// Whether at least half of this process's recent yields ran someone else.
bool core_shared();
// What yield_core remembers of each yield: whether it ran someone else. Public for the
// tests, which cannot choose what the scheduler does.
void note_yield(bool ran_others);
// How long a yield takes that ran someone else, at least: a few bare system calls of
// this machine, measured at each call (yield_core measures it once). Public for the
// tests.
std::chrono::nanoseconds yield_ran_others_after();

}  // namespace tutti::transport
