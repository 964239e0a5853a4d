/* Pins the ABI: config field offsets, enum values and the status table. A reorder or
 * renumbering fails here before abidiff ever runs (STYLE G20). C99, tutti.h only. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "tutti.h"

Test(abi_layout, config_fields_keep_their_offsets) {
  cr_expect_eq(offsetof(tutti_config, struct_size), 0);
  cr_expect_eq(offsetof(tutti_config, abi_magic), 8);
  cr_expect_eq(offsetof(tutti_config, rank), 12);
  cr_expect_eq(offsetof(tutti_config, world_size), 16);
  cr_expect_eq(offsetof(tutti_config, init_method), 24);
  cr_expect_eq(offsetof(tutti_config, init_timeout_ms), 32);
  cr_expect_eq(offsetof(tutti_config, op_timeout_ms), 40);
  cr_expect_eq(offsetof(tutti_config, name), 48);
  cr_expect_eq(offsetof(tutti_config, trace), 56);
  cr_expect_eq(sizeof(tutti_config), 64);
}

Test(abi_layout, status_values_are_stable) {
  cr_expect_eq(TUTTI_OK, 0);
  cr_expect_eq(TUTTI_INPROGRESS, 1);
  cr_expect_eq(TUTTI_ERR_INVALID_ARGUMENT, -1);
  cr_expect_eq(TUTTI_ERR_TIMEOUT, -2);
  cr_expect_eq(TUTTI_ERR_PEER_LOST, -3);
  cr_expect_eq(TUTTI_ERR_MISMATCH, -4);
  cr_expect_eq(TUTTI_ERR_ABORTED, -5);
  cr_expect_eq(TUTTI_ERR_TRANSPORT, -6);
  cr_expect_eq(TUTTI_ERR_UNSUPPORTED, -7);
  cr_expect_eq(TUTTI_ERR_NO_MEMORY, -8);
  cr_expect_eq(TUTTI_ERR_DENIED, -9);
  cr_expect_eq(TUTTI_ERR_INTERNAL, -10);
}

Test(abi_layout, dtype_and_op_values_are_stable) {
  cr_expect_eq(TUTTI_DTYPE_INT8, 0);
  cr_expect_eq(TUTTI_DTYPE_UINT8, 1);
  cr_expect_eq(TUTTI_DTYPE_INT32, 2);
  cr_expect_eq(TUTTI_DTYPE_INT64, 3);
  cr_expect_eq(TUTTI_DTYPE_FLOAT16, 4);
  cr_expect_eq(TUTTI_DTYPE_BFLOAT16, 5);
  cr_expect_eq(TUTTI_DTYPE_FLOAT32, 6);
  cr_expect_eq(TUTTI_DTYPE_FLOAT64, 7);
  cr_expect_eq(TUTTI_DTYPE_FLOAT8_E4M3, 8);
  cr_expect_eq(TUTTI_DTYPE_FLOAT8_E5M2, 9);
  cr_expect_eq(TUTTI_OP_SUM, 0);
  cr_expect_eq(TUTTI_OP_PROD, 1);
  cr_expect_eq(TUTTI_OP_MIN, 2);
  cr_expect_eq(TUTTI_OP_MAX, 3);
  cr_expect_eq(TUTTI_OP_AVG, 4);
  cr_expect_eq(TUTTI_MEMORY_AUTO, 0);
  cr_expect_eq(TUTTI_MEMORY_HOST, 1);
  cr_expect_eq(TUTTI_MEMORY_CUDA, 2);
}

/* Every entry of TUTTI_STATUS_MAP has its name and message in the library. */
Test(abi_layout, status_names_and_strings_match_the_map) {
#define CHECK_ENTRY(name, value, message)                            \
  cr_expect_str_eq(tutti_status_name(TUTTI_##name), "TUTTI_" #name); \
  cr_expect_str_eq(tutti_status_string(TUTTI_##name), message);
  TUTTI_STATUS_MAP(CHECK_ENTRY)
#undef CHECK_ENTRY
  cr_expect_str_eq(tutti_status_name((tutti_status)-999), "TUTTI_ERR_UNKNOWN");
  cr_expect(strlen(tutti_status_string((tutti_status)-999)) > 0);
}

Test(abi_layout, version_agrees_with_the_header) {
  cr_expect_eq(tutti_version(), (uint32_t)TUTTI_VERSION_HEX);
  cr_expect_eq(tutti_version() >> 16, TUTTI_VERSION_MAJOR);
  cr_expect_str_eq(tutti_version_string(), "0.1.0");
}
