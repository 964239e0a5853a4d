-- A tensor of the wrong shape on one rank, with TUTTI_CHECK=1 (tests/lua/CMakeLists.txt
-- sets it): rank 1 passes an 11x10 matrix where the others pass 11x11, and every rank's
-- all_reduce fails with an error that names MISMATCH, the ranks that differ, and the
-- counts, instead of hanging or reading past the smaller tensor. The error is a value
-- a script can test (err.status == "MISMATCH"), printed as "TUTTI_ERR_MISMATCH: ...".
--   TUTTI_CHECK=1 tutti launch -n 3 -- lua5.4 tests/lua/test_mismatch.lua
local tutti = require "tutti"
local check = require "check"

local rank, size = tutti.rank(), tutti.size()
assert(os.getenv("TUTTI_CHECK") == "1", "test_mismatch needs TUTTI_CHECK=1")
assert(size >= 2, "test_mismatch needs at least 2 ranks")

local t = rank == 1 and tutti.ones{11, 10} or tutti.ones{11, 11}
local ok, err = pcall(tutti.all_reduce, t, "max")
check.equal(ok, false, "the mismatched all_reduce fails")
check.equal(type(err), "table", "a tutti.error value, not a string")
check.equal(err.status, "MISMATCH", "err.status")
check.equal(err.name, "TUTTI_ERR_MISMATCH", "err.name")
check.equal(err.code, -4, "err.code")
check.equal(getmetatable(err).__name, "tutti.error", "its type")
local message = tostring(err)
check.equal(message, "TUTTI_ERR_MISMATCH: " .. err.message, "tostring(err)")
check.truthy(message:find("rank 1 called all_reduce #1 count=110", 1, true), "the message names rank 1's call: " .. message)
check.truthy(message:find("count=121", 1, true), "the message names the others' count: " .. message)
check.truthy(message:find("differ in: count", 1, true), "the message names the field: " .. message)
print(string.format("test_mismatch: rank %d of %d: ok", rank, size))
