/* What tutti.h promises about a Work's life, in one process: a release that races a
 * wait on another thread, and a communicator destroyed while an operation of it is
 * still pending. A receive from this rank itself that nothing has matched yet is the
 * operation that stays pending for as long as the test likes. */
#include <pthread.h>
#include <time.h>

#include "tests/capi/solo.h"

#include <criterion/redirect.h>

TestSuite(work_lifetime, .init = clear_launcher_environment);

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void sleep_ms(int ms) { nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL); }

struct waiter {
  tutti_work* work;
  tutti_status status;
  char message[256];
};

static void* wait_forever(void* arg) {
  struct waiter* waiter = arg;
  waiter->status = tutti_work_wait(waiter->work, -1);
  snprintf(waiter->message, sizeof waiter->message, "%s", tutti_last_error());
  return NULL;
}

/* The wait that began before the release holds the operation and ends with its status;
 * a wait after the release is refused, never a crash. */
Test(work_lifetime, release_racing_a_wait_on_another_thread, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  int32_t in = 0, out = 42;
  struct waiter waiter = {0};
  cr_assert_eq(tutti_recv(comm, &in, 1, TUTTI_DTYPE_INT32, 0, 9, &waiter.work), TUTTI_OK, "%s", tutti_last_error());
  pthread_t thread;
  pthread_create(&thread, NULL, wait_forever, &waiter);
  sleep_ms(100); /* the waiter is inside tutti_work_wait */
  cr_expect_eq(tutti_work_release(waiter.work), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_work_wait(waiter.work, 0), TUTTI_ERR_INVALID_ARGUMENT, "already released");
  expect_error(tutti_work_release(waiter.work), TUTTI_ERR_INVALID_ARGUMENT, "already released");
  /* The released receive still runs: a matching send completes it, and the waiter. */
  cr_assert_eq(tutti_send(comm, &out, 1, TUTTI_DTYPE_INT32, 0, 9, NULL), TUTTI_OK, "%s", tutti_last_error());
  pthread_join(thread, NULL);
  cr_expect_eq(waiter.status, TUTTI_OK, "the waiter got %s: %s", tutti_status_name(waiter.status), waiter.message);
  cr_expect_eq(in, 42);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

/* Sends done as posted (small, sent eagerly) share one completed operation, but each
 * still has a handle of its own: released once, refused after, never mistaken for the
 * handle that reuses its place. */
Test(work_lifetime, sends_done_as_posted_have_handles_of_their_own, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  int32_t out[3] = {7, 8, 9};
  tutti_work* sent[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; ++i) {
    cr_assert_eq(tutti_send(comm, &out[i], 1, TUTTI_DTYPE_INT32, 0, 4, &sent[i]), TUTTI_OK, "%s", tutti_last_error());
  }
  cr_expect(sent[0] != sent[1] && sent[1] != sent[2] && sent[0] != sent[2], "two sends got one handle");
  int done = 0;
  cr_expect_eq(tutti_work_test(sent[1], &done), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(done, 1, "a 4-byte send to this rank itself was not done as posted");
  cr_expect_eq(tutti_work_release(sent[1]), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_work_wait(sent[1], 0), TUTTI_ERR_INVALID_ARGUMENT, "already released");
  /* The next handle takes the released one's place, under another generation. */
  tutti_work* again = NULL;
  cr_assert_eq(tutti_send(comm, &out[1], 1, TUTTI_DTYPE_INT32, 0, 4, &again), TUTTI_OK, "%s", tutti_last_error());
  cr_expect(again != sent[1], "a new handle repeated a released one");
  expect_error(tutti_work_release(sent[1]), TUTTI_ERR_INVALID_ARGUMENT, "already released");
  for (int i = 0; i < 3; i += 2) {
    cr_expect_eq(tutti_work_wait(sent[i], -1), TUTTI_OK, "%s", tutti_last_error());
    cr_expect_eq(tutti_work_release(sent[i]), TUTTI_OK, "%s", tutti_last_error());
  }
  cr_expect_eq(tutti_work_wait(again, -1), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(tutti_work_release(again), TUTTI_OK, "%s", tutti_last_error());
  /* Every message arrived, in order. */
  const int32_t want[4] = {7, 8, 9, 8};
  for (int i = 0; i < 4; ++i) {
    int32_t in = -1;
    cr_assert_eq(tutti_recv(comm, &in, 1, TUTTI_DTYPE_INT32, 0, 4, NULL), TUTTI_OK, "%s", tutti_last_error());
    cr_expect_eq(in, want[i], "message %d: got %d, want %d", i, in, want[i]);
  }
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

static void environment_and_stderr(void) {
  clear_launcher_environment();
  cr_redirect_stderr();
}

/* Destroying a communicator does not wait for a receive that nothing will match: the
 * operation fails with ERR_ABORTED, saying why, and its work stays valid until released,
 * on this thread and on one that was waiting; the destroy says so once, on stderr. */
Test(work_lifetime, destroy_aborts_operations_still_pending, .init = environment_and_stderr, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  int32_t in[2] = {0, 0};
  tutti_work* pending = NULL;
  struct waiter waiter = {0};
  cr_assert_eq(tutti_recv(comm, &in[0], 1, TUTTI_DTYPE_INT32, 0, 1, &pending), TUTTI_OK, "%s", tutti_last_error());
  cr_assert_eq(tutti_recv(comm, &in[1], 1, TUTTI_DTYPE_INT32, 0, 2, &waiter.work), TUTTI_OK, "%s", tutti_last_error());
  pthread_t thread;
  pthread_create(&thread, NULL, wait_forever, &waiter);
  sleep_ms(100);
  long long start = now_ms();
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK, "%s", tutti_last_error());
  long long destroy_ms = now_ms() - start;
  cr_expect(destroy_ms < 2000, "destroy took %lld ms (op timeout 5000)", destroy_ms);
  pthread_join(thread, NULL);
  cr_expect_eq(waiter.status, TUTTI_ERR_ABORTED, "the waiter got %s", tutti_status_name(waiter.status));
  cr_expect(strstr(waiter.message, "communicator was destroyed") != NULL, "%s", waiter.message);
  expect_error(tutti_work_wait(pending, -1), TUTTI_ERR_ABORTED, "communicator was destroyed");
  int done = 0;
  cr_expect(tutti_work_test(pending, &done) == TUTTI_OK && done == 1);
  cr_expect_eq(tutti_work_release(pending), TUTTI_OK);
  cr_expect_eq(tutti_work_release(waiter.work), TUTTI_OK);
  fflush(stderr);
  char written[4096] = {0};
  size_t length = fread(written, 1, sizeof written - 1, cr_get_redirected_stderr());
  written[length] = '\0';
  cr_expect(strstr(written,
                   "was destroyed with 2 sends or receives still in flight, now cancelled (ABORTED): "
                   "tutti_recv #1 (peer 0, tag 1)") != NULL,
            "stderr: %s", written);
}
