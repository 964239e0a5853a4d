/* The draft init that does not block (tutti_comm_init_start, tutti_comm_init_wait) and
 * an init given up from another thread. A world of two in which rank 1 never comes is
 * an init that waits as long as the test likes: rank 0 serves the store and waits for
 * rank 1 at the meeting. */
#include <pthread.h>
#include <time.h>

#include "tests/capi/solo.h"

TestSuite(draft_init_start, .init = clear_launcher_environment);

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

/* Rank 0 of a world of two that rank 1 never joins. */
static tutti_config lonely_config(void) {
  tutti_config config = solo_config();
  config.world_size = 2;
  config.init_timeout_ms = 20000;
  return config;
}

Test(draft_init_start, a_world_of_one_joins_then_works, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init_start(&config, &comm), TUTTI_INPROGRESS, "%s", tutti_last_error());
  cr_assert_not_null(comm);
  tutti_status status;
  long long start = now_ms();
  while ((status = tutti_comm_init_wait(comm, 10)) == TUTTI_INPROGRESS && now_ms() - start < 10000) {
  }
  cr_assert_eq(status, TUTTI_OK, "%s: %s", tutti_status_name(status), tutti_last_error());
  cr_expect_eq(tutti_comm_init_wait(comm, 0), TUTTI_OK, "ready stays ready");
  int32_t size = 0;
  cr_expect(tutti_comm_size(comm, &size) == TUTTI_OK && size == 1);
  float x = 2.5f;
  cr_expect_eq(tutti_all_reduce(comm, &x, &x, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL), TUTTI_OK);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
  /* A comm from tutti_comm_init is ready at once. */
  config = solo_config();
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_init_wait(comm, 0), TUTTI_OK);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

Test(draft_init_start, bad_arguments_fail_at_once, .timeout = 30) {
  tutti_config config = solo_config();
  config.world_size = 0;
  tutti_comm* comm = (tutti_comm*)&config;
  expect_error(tutti_comm_init_start(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "world_size");
  cr_expect_null(comm);
  expect_error(tutti_comm_init_start(&config, NULL), TUTTI_ERR_INVALID_ARGUMENT, "out is NULL");
  expect_error(tutti_comm_init_wait(NULL, 0), TUTTI_ERR_INVALID_ARGUMENT, "comm is NULL");
}

struct aborter {
  tutti_comm* comm;
  int delay_ms;
  tutti_status status;
};

static void* abort_later(void* arg) {
  struct aborter* a = arg;
  nanosleep(&(struct timespec){0, a->delay_ms * 1000000L}, NULL);
  a->status = tutti_comm_abort(a->comm);
  return NULL;
}

/* While it joins, the comm refuses other calls and says why; an abort from another
 * thread ends the init within moments (not its 20 s timeout), with ERR_ABORTED at every
 * wait after. */
Test(draft_init_start, abort_from_another_thread_gives_the_init_up, .timeout = 30) {
  tutti_config config = lonely_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init_start(&config, &comm), TUTTI_INPROGRESS, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_init_wait(comm, 200), TUTTI_INPROGRESS, "rank 1 never comes");
  int32_t rank = -1;
  expect_error(tutti_comm_rank(comm, &rank), TUTTI_ERR_INVALID_ARGUMENT, "still joining the job");
  float x = 1.0f;
  expect_error(tutti_all_reduce(comm, &x, &x, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL), TUTTI_ERR_INVALID_ARGUMENT,
               "tutti_comm_init_wait");
  struct aborter aborter = {comm, 100, TUTTI_ERR_INTERNAL};
  pthread_t thread;
  long long start = now_ms();
  pthread_create(&thread, NULL, abort_later, &aborter);
  tutti_status status = tutti_comm_init_wait(comm, -1);
  long long waited_ms = now_ms() - start;
  pthread_join(thread, NULL);
  cr_expect_eq(aborter.status, TUTTI_OK, "tutti_comm_abort during the init");
  cr_expect_eq(status, TUTTI_ERR_ABORTED, "%s: %s", tutti_status_name(status), tutti_last_error());
  cr_expect(strstr(tutti_last_error(), "tutti_comm_abort") != NULL, "%s", tutti_last_error());
  cr_expect(waited_ms < 3000, "the init ended %lld ms after the wait began (abort after 100 ms)", waited_ms);
  expect_error(tutti_comm_init_wait(comm, 0), TUTTI_ERR_ABORTED, "tutti_comm_abort");
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

/* Destroying a comm that is still joining gives the init up and returns promptly. */
Test(draft_init_start, destroy_during_the_init_returns_promptly, .timeout = 30) {
  tutti_config config = lonely_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init_start(&config, &comm), TUTTI_INPROGRESS, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_init_wait(comm, 300), TUTTI_INPROGRESS);
  long long start = now_ms();
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK, "%s", tutti_last_error());
  long long destroy_ms = now_ms() - start;
  cr_expect(destroy_ms < 3000, "destroy took %lld ms (init timeout 20 s)", destroy_ms);
}

/* An init still connecting (no store listens: rank 1's view of a rank 0 that never
 * comes) is given up too. */
Test(draft_init_start, abort_while_connecting_to_the_store, .timeout = 30) {
  tutti_config config = lonely_config();
  config.rank = 1;
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init_start(&config, &comm), TUTTI_INPROGRESS, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_init_wait(comm, 300), TUTTI_INPROGRESS, "nobody serves the store");
  long long start = now_ms();
  cr_expect_eq(tutti_comm_abort(comm), TUTTI_OK);
  tutti_status status = tutti_comm_init_wait(comm, 5000);
  cr_expect_eq(status, TUTTI_ERR_ABORTED, "%s: %s", tutti_status_name(status), tutti_last_error());
  cr_expect(now_ms() - start < 3000, "the connecting init took %lld ms to give up", now_ms() - start);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}
