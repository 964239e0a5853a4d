-- Every argument error: each bad call raises a luaL_argerror-style message with the
-- argument's position and what was expected, the same through the module's function
-- (tutti.all_reduce(...)) and the world's method (world:all_reduce(...)). The checks
-- happen before anything is sent, so the ranks stay in step. Run at 2 ranks.
--   tutti launch -n 2 -- lua5.4 tests/lua/test_arg_errors.lua
local tutti = require "tutti"
local check = require "check"

local rank, size = tutti.rank(), tutti.size()
assert(size == 2, "test_arg_errors expects 2 ranks")
local world = tutti.world()
-- A communicator of this rank alone: rooted calls check their lists on the root only,
-- and here every rank is the root of its own.
local solo = tutti.split(rank)

-- Checks that name(...) raises `expected` as a module function and as a method of comm.
-- The calls are not tail calls, which would hide the function's name from the message.
local function both(expected, name, ...)
  local as_function = load("local tutti = ...; return function(...) tutti." .. name .. "(...) end")(tutti)
  local as_method = load("return function(comm, ...) comm:" .. name .. "(...) end")()
  check.raises(expected, as_function, ...)
  check.raises(expected, as_method, world, ...)
end

local function method(expected, comm, name, ...)
  check.raises(expected, load("return function(comm, ...) comm:" .. name .. "(...) end")(), comm, ...)
end

local t = tutti.zeros{11, 11}
local ops = "one of sum, prod, min, max, avg"

both([[bad argument #2 to 'all_reduce' (op expected: ]] .. ops .. [[; got "maxx")]], "all_reduce", t, "maxx")
both([[bad argument #2 to 'all_reduce' (op expected: ]] .. ops .. [[; got 5)]], "all_reduce", t, 5)
both("bad argument #1 to 'all_reduce' (tutti.tensor expected, got string)", "all_reduce", "t")
both("bad argument #1 to 'all_reduce' (tutti.tensor expected, got no value)", "all_reduce")
both([[bad argument #3 to 'all_reduce' (options: unknown key "asynk"; the only option is async)]],
  "all_reduce", t, "sum", {asynk = true})
both("bad argument #2 to 'all_reduce' (options: async expected: a boolean; got string)",
  "all_reduce", t, {async = "yes"})
both("bad argument #2 to 'reduce' (dst expected: a rank in [0, 1]; got 2)", "reduce", t, 2)
both("bad argument #2 to 'reduce' (dst expected: a rank in [0, 1]; got 0.5)", "reduce", t, 0.5)
both("bad argument #2 to 'reduce' (dst expected: a rank in [0, 1]; got no value)", "reduce", t)
both([[bad argument #3 to 'reduce' (op expected: ]] .. ops .. [[; got "add")]], "reduce", t, 0, "add")
both("bad argument #2 to 'broadcast' (src expected: a rank in [0, 1]; got -1)", "broadcast", t, -1)
both("bad argument #2 to 'broadcast' (src expected: a rank in [0, 1]; got table)", "broadcast", t, {})
both("bad argument #1 to 'all_gather' (tensor_list expected: a list of 2 tutti.tensor, one per rank; got a list of 1)",
  "all_gather", {t}, t)
both("bad argument #1 to 'all_gather' (tensor_list expected: a list of 2 tutti.tensor, one per rank; got \"list\")",
  "all_gather", "list", t)
both("bad argument #1 to 'all_gather' (tensor_list[2] expected: a tutti.tensor; got number)", "all_gather", {t, 5}, t)
both("bad argument #1 to 'all_gather' (tensor_list[2] expected: 121 float32 elements, as the tensor has; "
  .. "got 3 int32 elements (3))", "all_gather", {t, tutti.zeros(3, "int32")}, t)
both("bad argument #2 to 'all_gather' (tutti.tensor expected, got table)", "all_gather", {t, t}, {t})
both("bad argument #2 to 'reduce_scatter' (input_list expected: a list of 2 tutti.tensor, one per rank; got a list of 3)",
  "reduce_scatter", t, {t, t, t})
both([[bad argument #3 to 'reduce_scatter' (op expected: ]] .. ops .. [[; got "mean")]],
  "reduce_scatter", t, {t, t}, "mean")
both("bad argument #3 to 'gather' (dst expected: a rank in [0, 1]; got 9)", "gather", t, nil, 9)
both("bad argument #3 to 'scatter' (src expected: a rank in [0, 1]; got 9)", "scatter", t, nil, 9)
both("bad argument #1 to 'all_to_all' (output_tensor_list expected: a list of tutti.tensor, one per rank; got table)",
  "all_to_all", {"x"}, {t, t})
both("bad argument #2 to 'all_to_all' (input_tensor_list expected: a list of 2 tutti.tensor, one per rank; got a list of 1)",
  "all_to_all", {t, t}, {t})
both("bad argument #1 to 'all_to_all' (output_tensor_list[2] expected: 121 float32 elements, as the tensor has; "
  .. "got 1 float32 elements (1))", "all_to_all", {t, tutti.zeros(1)}, {t, t})
local rows = tutti.zeros({4, 3})
both("bad argument #4 to 'all_to_all_single' (input_split_sizes add up to 3 rows, but input has 4; make them add "
  .. "up to its first dimension)", "all_to_all_single", rows, rows, {2, 2}, {1, 2})
both("bad argument #3 to 'all_to_all_single' (output_split_sizes: a list of 2 row counts expected, one per rank; "
  .. "got a list of another length)", "all_to_all_single", rows, rows, {4}, {2, 2})
both("bad argument #3 to 'all_to_all_single' (output_split_sizes[2] is not a row count from 0 to 4)",
  "all_to_all_single", rows, rows, {1, -1}, {2, 2})
both("bad argument #1 to 'all_to_all_single' (output is float32 but input is int32; give both the same dtype)",
  "all_to_all_single", rows, tutti.zeros({4, 3}, "int32"))
both("bad argument #2 to 'send' (dst expected: a rank in [0, 1]; got 5)", "send", t, 5)
both("bad argument #3 to 'send' (tag expected: an integer in [0, 2147483647]; got -1)", "send", t, 1, -1)
both([[bad argument #2 to 'recv' (src expected: a rank in [0, 1]; got "0")]], "recv", t, "0")
both("bad argument #3 to 'irecv' (tag expected: an integer in [0, 2147483647]; got 2147483648)", "irecv", t, 0, 1 << 31)
both("bad argument #1 to 'isend' (tutti.tensor expected, got nil)", "isend", nil, 1)
both("bad argument #1 to 'barrier' (options: unknown key \"timeout\"; the only option is async)", "barrier", {timeout = 5})
both([[bad argument #1 to 'split' (color expected: a 32-bit integer; got "red")]], "split", "red")
both("bad argument #2 to 'split' (key expected: a 32-bit integer; got 1.5)", "split", 0, 1.5)

-- The lists of rooted calls, on the root (of a communicator of one rank).
method("bad argument #2 to 'gather' (gather_list expected: a list of 1 tutti.tensor, one per rank; got a list of 2)",
  solo, "gather", t, {t, t}, 0)
method("bad argument #2 to 'gather' (gather_list expected: a list of 1 tutti.tensor, one per rank; got nil)",
  solo, "gather", t, nil, 0)
method("bad argument #2 to 'scatter' (scatter_list[1] expected: a tutti.tensor; got boolean)",
  solo, "scatter", t, {true}, 0)

-- Methods called on something else, and the tensor functions.
check.raises("bad argument #1 to 'rank' (tutti.comm expected, got number)", function() world.rank(5) end)
local impostor = {rank = world.rank}
check.raises("calling 'rank' on bad self (tutti.comm expected, got table)", function() impostor:rank() end)
check.raises("bad argument #1 to 'zeros' (shape: entry 2 is a string; sizes are non-negative integers)",
  function() tutti.zeros{2, "x"} end)
check.raises("bad argument #1 to 'zeros' (shape: entry 1 is -1; sizes are non-negative integers)",
  function() tutti.zeros{-1} end)
check.raises("bad argument #2 to 'zeros' (shape expected: a table of sizes such as {11, 11}, or sizes as numbers; got 2.5)",
  function() tutti.zeros(3, 2.5) end)
check.raises("bad argument #2 to 'zeros' (dtype expected: one of int8, uint8, int32, int64, float16, bfloat16, "
  .. [[float32, float64, float8_e4m3, float8_e5m2; got "float")]], function() tutti.zeros({2}, "float") end)
check.raises("bad argument #3 to 'ones' (dtype expected: one of int8, uint8, int32, int64, float16, bfloat16, "
  .. "float32, float64, float8_e4m3, float8_e5m2; got table)", function() tutti.ones(2, 2, {}) end)
check.raises("bad argument #1 to 'full' (shape expected: a table of sizes such as {11, 11}, then the value; got 2)",
  function() tutti.full(2, 3) end)
check.raises("bad argument #2 to 'full' (value expected: a number; got no value)", function() tutti.full({2}) end)
check.raises("bad argument #1 to 'tensor' (data: data[2] has 2 entries; expected 1, as the first entries at that level have)",
  function() tutti.tensor{{1}, {2, 3}} end)
check.raises("bad argument #1 to 'tensor' (data: data[1][1] is a string; expected a number)",
  function() tutti.tensor{{"a"}} end)
check.raises("bad argument #1 to 'tensor' (data expected: a number or nested tables of numbers; got boolean)",
  function() tutti.tensor(true) end)
check.raises("bad argument #3 to 'arange' (step: must be a number other than 0)", function() tutti.arange(0, 1, 0) end)
check.raises([[bad argument #1 to 'to' (dtype expected: one of int8, uint8, int32, int64, float16, bfloat16, ]]
  .. [[float32, float64, float8_e4m3, float8_e5m2; got "f32")]], function() t:to("f32") end)
check.raises([[bad argument #1 to 'fill' (value expected: a number; got "x")]], function() t:fill("x") end)
check.raises("bad argument #1 to 'copy' (tutti.tensor expected, got number)", function() t:copy(1) end)
check.raises("bad argument #1 to 'view' (shape: entry 1 is a boolean; sizes are non-negative integers)",
  function() t:view{true} end)
local w = tutti.barrier({async = true})
check.raises("bad argument #1 to 'wait' (timeout_ms expected: an integer >= 0, or nil)", function() w:wait(-5) end)
check.equal(w:wait(), true, "the barrier itself")

tutti.barrier()
print(string.format("test_arg_errors: rank %d of %d: ok", rank, size))
