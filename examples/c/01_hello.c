/* 01_hello: every rank joins the job, learns its place, and meets the ranks of its
 * parity in a communicator of their own (tutti_comm_split, as MPI_Comm_split).
 *
 * Run:   tutti launch -n 4 ./build/bin/01_hello
 * Prints (the order of lines between ranks may vary):
 *   [0] rank 0 of 4 (local rank 0 of 4 on node 0): in the even group as rank 1 of 2
 *   [1] rank 1 of 4 (local rank 1 of 4 on node 0): in the odd group as rank 1 of 2
 *   [2] rank 2 of 4 (local rank 2 of 4 on node 0): in the even group as rank 0 of 2
 *   [3] rank 3 of 4 (local rank 3 of 4 on node 0): in the odd group as rank 0 of 2
 * (within a group, the higher world rank comes first: the key is -rank). */
#include <stdio.h>

#include "tutti.h"

static int check(tutti_status status, const char* what) {
  if (status == TUTTI_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, tutti_status_name(status), tutti_last_error());
  return 1;
}

int main(void) {
  tutti_comm* world = NULL;
  /* NULL config: rank, world size and rendezvous come from the launcher. */
  if (check(tutti_comm_init(NULL, &world), "tutti_comm_init")) return 1;

  int32_t rank, size, local_rank, local_size, node;
  tutti_comm_rank(world, &rank);
  tutti_comm_size(world, &size);
  tutti_comm_local_rank(world, &local_rank);
  tutti_comm_local_size(world, &local_size);
  tutti_comm_node_rank(world, &node);

  tutti_comm* group = NULL;
  if (check(tutti_comm_split(world, rank % 2, -rank, &group), "tutti_comm_split")) return 1;
  int32_t group_rank, group_size;
  tutti_comm_rank(group, &group_rank);
  tutti_comm_size(group, &group_size);

  printf("rank %d of %d (local rank %d of %d on node %d): in the %s group as rank %d of %d\n", rank, size, local_rank,
         local_size, node, rank % 2 ? "odd" : "even", group_rank, group_size);

  tutti_comm_destroy(group);
  tutti_comm_destroy(world);
  return 0;
}
