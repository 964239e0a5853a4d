/* The communicator calls through tutti.h alone, in one process: a world of one rank,
 * and every bad input that needs no second process. */
#include "tests/capi/solo.h"

TestSuite(comm, .init = clear_launcher_environment);

Test(comm, config_init_fills_defaults) {
  tutti_config config;
  memset(&config, 0x5a, sizeof config);
  cr_assert_eq(tutti_config_init(&config, sizeof config), TUTTI_OK);
  cr_expect_eq(config.struct_size, sizeof config);
  cr_expect_eq(config.rank, -1);
  cr_expect_eq(config.world_size, -1);
  cr_expect_null(config.init_method);
  cr_expect_eq(config.init_timeout_ms, -1);
  cr_expect_eq(config.op_timeout_ms, -1);
  cr_expect_null(config.name);
  cr_expect_null(config.trace);
}

/* config.trace starts the process's trace there: the world's collectives are in the
 * file once the world is destroyed (its end drains the trace). */
Test(comm, config_trace_names_the_trace_folder, .timeout = 30) {
  char folder[] = "/tmp/tutti-capi-trace-XXXXXX";
  cr_assert_not_null(mkdtemp(folder));
  tutti_config config = solo_config();
  config.trace = folder;
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  float x[2] = {1, 2};
  cr_assert_eq(tutti_all_reduce(comm, x, x, 2, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL), TUTTI_OK);
  cr_assert_eq(tutti_comm_destroy(comm), TUTTI_OK);
  char command[256];
  snprintf(command, sizeof command, "grep -l '\"name\":\"all_reduce\"' %s/rank-0.*.json > /dev/null", folder);
  cr_expect_eq(system(command), 0, "no all_reduce in a trace file under %s", folder);
  snprintf(command, sizeof command, "rm -rf %s", folder);
  cr_expect_eq(system(command), 0);
}

Test(comm, config_init_never_writes_past_an_older_callers_struct) {
  unsigned char buffer[sizeof(tutti_config) + 16];
  memset(buffer, 0xee, sizeof buffer);
  size_t old_size = offsetof(tutti_config, op_timeout_ms); /* a struct that ended earlier */
  cr_assert_eq(tutti_config_init((tutti_config*)buffer, old_size), TUTTI_OK);
  for (size_t i = old_size; i < sizeof buffer; ++i) cr_expect_eq(buffer[i], 0xee, "byte %zu was written", i);
}

Test(comm, config_init_rejects_null_and_tiny_sizes) {
  expect_error(tutti_config_init(NULL, sizeof(tutti_config)), TUTTI_ERR_INVALID_ARGUMENT, "config is NULL");
  tutti_config config;
  expect_error(tutti_config_init(&config, 4), TUTTI_ERR_INVALID_ARGUMENT, "pass sizeof(tutti_config)");
}

Test(comm, world_of_one, .timeout = 30) {
  tutti_config config = solo_config();
  config.name = "solo";
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  int32_t rank = -1, size = -1, local_rank = -1, local_size = -1, node = -1;
  cr_expect_eq(tutti_comm_rank(comm, &rank), TUTTI_OK);
  cr_expect_eq(tutti_comm_size(comm, &size), TUTTI_OK);
  cr_expect_eq(tutti_comm_local_rank(comm, &local_rank), TUTTI_OK);
  cr_expect_eq(tutti_comm_local_size(comm, &local_size), TUTTI_OK);
  cr_expect_eq(tutti_comm_node_rank(comm, &node), TUTTI_OK);
  cr_expect(rank == 0 && size == 1 && local_rank == 0 && local_size == 1 && node == 0);

  tutti_comm* none = (tutti_comm*)1;
  cr_expect_eq(tutti_comm_split(comm, TUTTI_UNDEFINED, 0, &none), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_null(none);
  tutti_comm* sub = NULL;
  cr_assert_eq(tutti_comm_split(comm, 7, 0, &sub), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_size(sub, &size), TUTTI_OK);
  cr_expect_eq(size, 1);
  cr_expect_eq(tutti_comm_destroy(sub), TUTTI_OK);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

/* A C caller may pass any int as an enum: values outside tutti_dtype, tutti_op and
 * tutti_status are refused or named unknown, and read as ints, never as the enum
 * (capi/c_enum.h says why). */
Test(comm, enum_arguments_outside_their_enums_are_refused, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  int32_t x = 1;
  expect_error(tutti_all_reduce(comm, &x, &x, 1, (tutti_dtype)99, TUTTI_OP_SUM, NULL), TUTTI_ERR_INVALID_ARGUMENT,
               "dtype");
  expect_error(tutti_broadcast(comm, &x, &x, 1, (tutti_dtype)-1, 0, NULL), TUTTI_ERR_INVALID_ARGUMENT, "dtype");
  expect_error(tutti_all_reduce(comm, &x, &x, 1, TUTTI_DTYPE_INT32, (tutti_op)99, NULL), TUTTI_ERR_INVALID_ARGUMENT,
               "op");
  expect_error(tutti_reduce(comm, &x, &x, 1, TUTTI_DTYPE_INT32, (tutti_op)-1, 0, NULL), TUTTI_ERR_INVALID_ARGUMENT,
               "op");
  cr_expect_str_eq(tutti_status_name((tutti_status)-999), "TUTTI_ERR_UNKNOWN");
  cr_expect_eq(tutti_all_reduce(comm, &x, &x, 1, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL), TUTTI_OK, "%s",
               tutti_last_error());
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

Test(comm, abort_fails_later_calls_with_aborted, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_abort(comm), TUTTI_OK);
  cr_expect_eq(tutti_comm_abort(comm), TUTTI_OK, "a second abort is harmless");
  tutti_comm* sub = NULL;
  expect_error(tutti_comm_split(comm, 0, 0, &sub), TUTTI_ERR_ABORTED, "was aborted");
  cr_expect_null(sub);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

Test(comm, init_rejects_bad_arguments, .timeout = 30) {
  tutti_comm* comm = (tutti_comm*)1;
  tutti_config config = solo_config();
  expect_error(tutti_comm_init(&config, NULL), TUTTI_ERR_INVALID_ARGUMENT, "out is NULL");

  config.world_size = 0;
  expect_error(tutti_comm_init(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "config.world_size is 0");
  cr_expect_null(comm, "a failing constructor leaves *out NULL");

  config = solo_config();
  config.rank = 5;
  config.world_size = 4;
  expect_error(tutti_comm_init(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "rank 5 (from config.rank) is outside");

  config = solo_config();
  config.init_method = "carrier-pigeon://coop";
  expect_error(tutti_comm_init(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "is not known");

  config = solo_config();
  config.init_method = "tcp://127.0.0.1";
  expect_error(tutti_comm_init(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "is not HOST:PORT");

  config = solo_config();
  config.init_timeout_ms = 0;
  expect_error(tutti_comm_init(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "config.init_timeout_ms is 0");

  tutti_config raw;
  memset(&raw, 0, sizeof raw);
  expect_error(tutti_comm_init(&raw, &comm), TUTTI_ERR_INVALID_ARGUMENT, "call tutti_config_init");
}

/* A program started alone is rank 0 of a world of one, as an MPI singleton; a launcher
 * half set up (a rank without a store address, an address without a rank) is an error
 * that says what to set. */
Test(comm, init_without_any_launcher_is_a_world_of_one, .timeout = 30) {
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(NULL, &comm), TUTTI_OK, "%s", tutti_last_error());
  int32_t rank = -1, size = -1;
  cr_expect(tutti_comm_rank(comm, &rank) == TUTTI_OK && rank == 0);
  cr_expect(tutti_comm_size(comm, &size) == TUTTI_OK && size == 1);
  float x[2] = {1.5f, 2.5f};
  cr_expect_eq(tutti_all_reduce(comm, x, x, 2, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL), TUTTI_OK, "%s",
               tutti_last_error());
  cr_expect(x[0] == 1.5f && x[1] == 2.5f);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);

  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "1", 1);
  expect_error(tutti_comm_init(NULL, &comm), TUTTI_ERR_INVALID_ARGUMENT, "run under tutti launch, srun or mpirun");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  setenv("TUTTI_RANK", "0", 1);
  setenv("TUTTI_WORLD_SIZE", "1", 1);
  expect_error(tutti_comm_init(NULL, &comm), TUTTI_ERR_INVALID_ARGUMENT, "set TUTTI_ADDR=HOST:PORT");
}

Test(comm, unparsable_timeout_variable_is_named, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  setenv("TUTTI_OP_TIMEOUT_MS", "soon", 1);
  expect_error(tutti_comm_init(&config, &comm), TUTTI_ERR_INVALID_ARGUMENT, "TUTTI_OP_TIMEOUT_MS=\"soon\"");
}

Test(comm, handles_are_checked) {
  int32_t value = 0;
  expect_error(tutti_comm_rank(NULL, &value), TUTTI_ERR_INVALID_ARGUMENT, "comm is NULL");
  /* Memory that is not a tutti_comm: the tag check catches it. */
  uint64_t not_a_comm[8] = {0};
  expect_error(tutti_comm_size((tutti_comm*)not_a_comm, &value), TUTTI_ERR_INVALID_ARGUMENT, "not a live tutti_comm");
  expect_error(tutti_comm_abort((tutti_comm*)not_a_comm), TUTTI_ERR_INVALID_ARGUMENT, "not a live tutti_comm");
  expect_error(tutti_comm_destroy((tutti_comm*)not_a_comm), TUTTI_ERR_INVALID_ARGUMENT, "not a live tutti_comm");
  cr_expect_eq(tutti_comm_destroy(NULL), TUTTI_OK);
}

Test(comm, getters_reject_null_output, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_comm_rank(comm, NULL), TUTTI_ERR_INVALID_ARGUMENT, "output pointer is NULL");
  expect_error(tutti_comm_split(comm, 0, 0, NULL), TUTTI_ERR_INVALID_ARGUMENT, "out is NULL");
  expect_error(tutti_comm_split(comm, -5, 0, &comm), TUTTI_ERR_INVALID_ARGUMENT, "color -5");
  tutti_comm_destroy(comm);
}

/* A receive that nothing matches waits out the op timeout: the one set last, which a
 * split passes on; out-of-range values are refused and change nothing. */
Test(comm, set_op_timeout_bounds_later_operations_and_splits, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_comm_set_op_timeout(comm, 0), TUTTI_ERR_INVALID_ARGUMENT, "op_timeout_ms is 0");
  expect_error(tutti_comm_set_op_timeout(comm, (int64_t)1 << 41), TUTTI_ERR_INVALID_ARGUMENT, "in [1, ");
  expect_error(tutti_comm_set_op_timeout(NULL, 100), TUTTI_ERR_INVALID_ARGUMENT, "comm is NULL");
  cr_assert_eq(tutti_comm_set_op_timeout(comm, 150), TUTTI_OK, "%s", tutti_last_error());
  int32_t value = 0;
  expect_error(tutti_recv(comm, &value, 1, TUTTI_DTYPE_INT32, 0, 7, NULL), TUTTI_ERR_TIMEOUT, "timed out after 150 ms");
  tutti_comm* sub = NULL;
  cr_assert_eq(tutti_comm_split(comm, 0, 0, &sub), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_recv(sub, &value, 1, TUTTI_DTYPE_INT32, 0, 7, NULL), TUTTI_ERR_TIMEOUT, "timed out after 150 ms");
  cr_assert_eq(tutti_comm_set_op_timeout(sub, 250), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_recv(sub, &value, 1, TUTTI_DTYPE_INT32, 0, 7, NULL), TUTTI_ERR_TIMEOUT, "timed out after 250 ms");
  /* A wait that runs out before the operation does says INPROGRESS, not an error; a
   * wait longer than any clock counts is a wait until the operation's own timeout, not
   * one that gives up at once; and once the operation has timed out, even a short wait
   * says ERR_TIMEOUT: the two are never confused. */
  tutti_work* work = NULL;
  cr_assert_eq(tutti_recv(sub, &value, 1, TUTTI_DTYPE_INT32, 0, 7, &work), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(tutti_work_wait(work, 0), TUTTI_INPROGRESS);
  cr_expect_eq(tutti_work_wait(work, 20), TUTTI_INPROGRESS);
  cr_expect(strstr(tutti_last_error(), "still running") != NULL, "%s", tutti_last_error());
  expect_error(tutti_work_wait(work, INT64_MAX), TUTTI_ERR_TIMEOUT, "timed out after 250 ms");
  expect_error(tutti_work_wait(work, 0), TUTTI_ERR_TIMEOUT, "timed out after 250 ms");
  cr_expect_eq(tutti_work_release(work), TUTTI_OK);
  cr_expect_eq(tutti_comm_destroy(sub), TUTTI_OK);
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}

/* A world of one has no shared-memory group: tutti_mem_alloc gives memory of this
 * process, page-aligned and zero-filled, that collectives take like any other; and every bad argument
 * is refused with a message. */
Test(comm, mem_alloc_on_one_rank_and_its_bad_arguments, .timeout = 30) {
  tutti_config config = solo_config();
  tutti_comm* comm = NULL;
  cr_assert_eq(tutti_comm_init(&config, &comm), TUTTI_OK, "%s", tutti_last_error());
  void* memory = (void*)1;
  expect_error(tutti_mem_alloc(comm, 0, &memory), TUTTI_ERR_INVALID_ARGUMENT, "bytes is 0");
  cr_expect_null(memory);
  expect_error(tutti_mem_alloc(comm, 64, NULL), TUTTI_ERR_INVALID_ARGUMENT, "ptr is NULL");
  expect_error(tutti_mem_alloc(NULL, 64, &memory), TUTTI_ERR_INVALID_ARGUMENT, "comm is NULL");
  /* Sizes that rounding to the page would wrap around, and the limit's edge: refused,
   * or (at the limit, more than this machine has) out of memory, never a crash. */
  const size_t limit = (size_t)1 << 46;
  const size_t too_large[] = {SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX / 2 + 2, limit + 1};
  for (size_t i = 0; i < sizeof too_large / sizeof too_large[0]; ++i) {
    memory = (void*)1;
    expect_error(tutti_mem_alloc(comm, too_large[i], &memory), TUTTI_ERR_INVALID_ARGUMENT,
                 "more than tutti_mem_alloc can map: one process maps at most 64 TiB");
    cr_expect_null(memory);
  }
  expect_error(tutti_mem_alloc(comm, limit, &memory), TUTTI_ERR_NO_MEMORY, "cannot have that much memory");
  cr_expect_null(memory);

  cr_assert_eq(tutti_mem_alloc(comm, 1000, &memory), TUTTI_OK, "%s", tutti_last_error());
  cr_assert_eq((uintptr_t)memory % 4096, 0, "not page-aligned: %p", memory);
  for (int i = 0; i < 1000; ++i) cr_assert_eq(((unsigned char*)memory)[i], 0, "byte %d is not zero", i);
  float* values = memory;
  for (int i = 0; i < 250; ++i) values[i] = (float)i;
  cr_expect_eq(tutti_all_reduce(comm, values, values, 250, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL), TUTTI_OK, "%s",
               tutti_last_error());
  cr_expect_eq(values[249], 249.0f);

  int elsewhere = 0;
  expect_error(tutti_mem_free(comm, &elsewhere), TUTTI_ERR_INVALID_ARGUMENT, "did not come from tutti_mem_alloc");
  cr_expect_eq(tutti_mem_free(comm, NULL), TUTTI_OK);
  cr_expect_eq(tutti_mem_free(comm, memory), TUTTI_OK, "%s", tutti_last_error());
  expect_error(tutti_mem_free(comm, memory), TUTTI_ERR_INVALID_ARGUMENT, "or was freed already");
  /* What is not freed goes with the communicator. */
  cr_assert_eq(tutti_mem_alloc(comm, 1 << 20, &memory), TUTTI_OK, "%s", tutti_last_error());
  cr_expect_eq(tutti_comm_abort(comm), TUTTI_OK);
  expect_error(tutti_mem_alloc(comm, 64, &memory), TUTTI_ERR_ABORTED, "was aborted");
  cr_expect_eq(tutti_comm_destroy(comm), TUTTI_OK);
}
