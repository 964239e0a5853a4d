/* 04_overlap: an asynchronous all_reduce runs while the rank computes, as gradient
 * buckets do in data-parallel training; then wait with a timeout.
 *
 * Run:   tutti launch -n 2 ./build/bin/04_overlap
 * Prints, for each rank:
 *   [r] computed 1.2e+07 while the all_reduce ran; its result is correct: yes
 */
#include <stdio.h>
#include <stdlib.h>

#include "tutti.h"

enum { COUNT = 4 << 20 };

static int check(tutti_status status, const char* what) {
  if (status == TUTTI_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, tutti_status_name(status), tutti_last_error());
  return 1;
}

int main(void) {
  tutti_comm* world = NULL;
  if (check(tutti_comm_init(NULL, &world), "tutti_comm_init")) return 1;
  int32_t rank, size;
  tutti_comm_rank(world, &rank);
  tutti_comm_size(world, &size);

  float* gradients = malloc(sizeof(float) * COUNT);
  if (gradients == NULL) return 1;
  for (int i = 0; i < COUNT; ++i) gradients[i] = (float)(rank + 1);

  tutti_work* work = NULL;
  /* In place: send == recv. The buffer is the operation's until wait says done. */
  if (check(tutti_all_reduce(world, gradients, gradients, COUNT, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &work),
            "all_reduce")) {
    return 1;
  }
  double computed = 0;
  for (int i = 1; i < 20000000; ++i) computed += 1.0 / i; /* the "forward pass" */

  if (check(tutti_work_wait(work, 60000), "wait")) return 1;
  tutti_work_release(work);
  float expected = (float)size * (size + 1) / 2;
  int correct = gradients[0] == expected && gradients[COUNT - 1] == expected;
  printf("computed %.3g while the all_reduce ran; its result is correct: %s\n", computed, correct ? "yes" : "no");

  free(gradients);
  tutti_comm_destroy(world);
  return correct ? 0 : 1;
}
