// This process's place in the job: what the launcher's environment says before
// joining, and joining itself. Reads only the environment and tutti.h, as any
// program that embeds tutti would.
#pragma once

#include "tutti.h"

namespace tutti::repl {

// Whether this process speaks for the job before joining it (to report a syntax error
// once): rank 0, a process that no launcher started, or one whose rank variable is
// not a number (tutti_comm_init would refuse it). Reads the first variable present of
// TUTTI_RANK, RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK and PMI_RANK, the order in
// which tutti_comm_init looks for a launcher.
bool speaks_before_joining();

// Whether this process may serve the job's rendezvous store: rank 0, where the
// launcher does not serve it itself (srun, mpirun; tutti launch says
// TUTTI_STORE_SERVER=launcher), and not a process that joins a running job.
bool may_serve_store();

// Joins the job through tutti_comm_init, as the launcher's environment says, under
// name; a process that no launcher started is rank 0 of a world of one; one started
// to join a running job (TUTTI_JOIN=1: tutti launch --restart) joins it through
// tutti_comm_join instead. Returns nullptr after printing why on stderr.
tutti_comm* join_job(const char* name);

}  // namespace tutti::repl
