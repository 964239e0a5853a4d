/* The device-buffer calls of tutti.h in one process, a world of one: what works on
 * every machine (host buffers untouched by the device path, bad arguments, a host
 * work through tutti_work_wait_stream) and what a machine without CUDA says. Device
 * buffers themselves are tested in tests/gpu, on a GPU. */
#include "tests/capi/solo.h"

static tutti_comm* solo_comm(void) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  return comm;
}

TestSuite(device_api, .init = clear_launcher_environment);

/* Whether this process can use CUDA, as tutti_comm_set_stream finds out. */
static int cuda_usable(tutti_comm* comm) {
  tutti_status status = tutti_comm_set_stream(comm, NULL);
  if (status == TUTTI_OK) return 1;
  expect_error(status, TUTTI_ERR_UNSUPPORTED, "tutti_comm_set_stream: CUDA is not available: ");
  return 0;
}

Test(device_api, host_buffers_run_as_ever_in_every_memory_mode, .timeout = 30) {
  tutti_comm* comm = solo_comm();
  const tutti_memory modes[] = {TUTTI_MEMORY_AUTO, TUTTI_MEMORY_HOST};
  for (int m = 0; m < 2; ++m) {
    tutti_status set = tutti_comm_set_memory(comm, modes[m]);
    /* AUTO asks for CUDA to find device pointers: unsupported without it. */
    if (set != TUTTI_OK) expect_error(set, TUTTI_ERR_UNSUPPORTED, "CUDA is not available");
    float send[4] = {1, 2, 3, 4}, recv[4] = {0};
    cr_assert_eq(tutti_all_reduce(comm, send, recv, 4, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL), TUTTI_OK, "%s",
                 tutti_last_error());
    for (int i = 0; i < 4; ++i) cr_expect_eq(recv[i], send[i]);
  }
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

Test(device_api, without_cuda_the_device_calls_say_so_and_host_calls_still_work, .timeout = 30) {
  tutti_comm* comm = solo_comm();
  if (cuda_usable(comm)) {
    printf("device_api: this machine has a usable CUDA device; its device calls are tested in tests/gpu\n");
  } else {
    expect_error(tutti_comm_set_device(comm, 0), TUTTI_ERR_UNSUPPORTED, "tutti_comm_set_device: CUDA is not available");
    expect_error(tutti_comm_set_memory(comm, TUTTI_MEMORY_CUDA), TUTTI_ERR_UNSUPPORTED, "CUDA is not available");
    cr_expect_eq(tutti_comm_set_memory(comm, TUTTI_MEMORY_HOST), TUTTI_OK, "%s", tutti_last_error());
  }
  int64_t value = 41, sum = 0;
  cr_assert_eq(tutti_all_reduce(comm, &value, &sum, 1, TUTTI_DTYPE_INT64, TUTTI_OP_SUM, NULL), TUTTI_OK, "%s",
               tutti_last_error());
  cr_expect_eq(sum, 41);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

Test(device_api, bad_arguments_are_refused, .timeout = 30) {
  tutti_comm* comm = solo_comm();
  expect_error(tutti_comm_set_memory(comm, (tutti_memory)7), TUTTI_ERR_INVALID_ARGUMENT, "7 is not a tutti_memory");
  expect_error(tutti_comm_set_device(comm, -2), TUTTI_ERR_INVALID_ARGUMENT, "device -2 is negative");
  expect_error(tutti_comm_set_stream(NULL, NULL), TUTTI_ERR_INVALID_ARGUMENT, "tutti_comm_set_stream");
  expect_error(tutti_comm_set_memory(NULL, TUTTI_MEMORY_HOST), TUTTI_ERR_INVALID_ARGUMENT, "tutti_comm_set_memory");
  expect_error(tutti_work_wait_stream(NULL, NULL), TUTTI_ERR_INVALID_ARGUMENT, "tutti_work_wait_stream: work is NULL");
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

Test(device_api, wait_stream_on_a_host_work_waits_for_it, .timeout = 30) {
  tutti_comm* comm = solo_comm();
  double send[3] = {1.5, 2.5, 3.5}, recv[3] = {0};
  tutti_work* work = NULL;
  cr_assert_eq(tutti_all_reduce(comm, send, recv, 3, TUTTI_DTYPE_FLOAT64, TUTTI_OP_MAX, &work), TUTTI_OK, "%s",
               tutti_last_error());
  cr_assert_eq(tutti_work_wait_stream(work, NULL), TUTTI_OK, "%s", tutti_last_error());
  int done = 0;
  cr_assert_eq(tutti_work_test(work, &done), TUTTI_OK);
  cr_expect_eq(done, 1);
  for (int i = 0; i < 3; ++i) cr_expect_eq(recv[i], send[i]);
  cr_expect_eq(tutti_work_release(work), TUTTI_OK);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}
