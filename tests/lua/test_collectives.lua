-- Every collective, blocking, on the world and on tutti.world() as methods, checked
-- against values each rank computes for every rank: every op of all_reduce, reduce and
-- reduce_scatter, all ten dtypes, 1 and 121 (11x11) elements, every root that is
-- first or last, and lists that are rows of one matrix (used in place) or separate
-- tensors (through a buffer). Run at 1 to 5 ranks, so sizes that are not powers of two.
--   tutti launch -n 3 -- lua5.4 tests/lua/test_collectives.lua
local tutti = require "tutti"
local check = require "check"

local rank, size = tutti.rank(), tutti.size()
local world = tutti.world()
local dtypes = {"int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "float8_e4m3",
  "float8_e5m2"}
local ops = {"sum", "prod", "min", "max", "avg"}
local shapes = {{1}, {11, 11}}
local roots = size > 1 and {0, size - 1} or {0}
-- Rounding allowed for avg's division, relative to the value (everything else is exact).
local epsilon = {float16 = 2 ^ -10, bfloat16 = 2 ^ -7, float32 = 2 ^ -20, float64 = 2 ^ -40, float8_e4m3 = 2 ^ -4,
  float8_e5m2 = 2 ^ -3}

-- Rank r's element i (0-based) of block b in case c: small integers, so every sum,
-- product, min and max below is exact in every dtype (|sum| <= 20, |product| <= 32);
-- products take 1, 2 and -1 (1 and 2 for uint8), everything else [-4, 4] ([0, 8] for uint8;
-- fp8, whose integers are exact only up to 16 (e4m3) and 8 (e5m2), [-2, 2] and [-1, 1],
-- so that every partial sum of up to 8 ranks is exact too).
-- Hashed rather than linear in r, so that sums come out negative and not divisible by
-- the size often enough to check that integer avg truncates toward zero.
local fp8_reach = {float8_e4m3 = 2, float8_e5m2 = 1}
local function value(dtype, op, c, r, b, i)
  local x = ((c * 131 + r * 31 + b * 17 + i * 7) * 2654435761) % 4294967296
  local h = (x ~ (x >> 13)) % 9
  if op == "prod" then return ({1, 2, -1})[h % (dtype == "uint8" and 2 or 3) + 1] end
  local reach = fp8_reach[dtype]
  if reach then return h % (2 * reach + 1) - reach end
  return dtype == "uint8" and h or h - 4
end

local function numel(shape) return shape[2] and shape[1] * shape[2] or shape[1] end

local function values(dtype, op, c, r, b, shape)
  local list = {}
  for i = 0, numel(shape) - 1 do list[i + 1] = value(dtype, op, c, r, b, i) end
  return list
end

local function make(dtype, op, c, r, b, shape)
  return tutti.tensor(values(dtype, op, c, r, b, shape), dtype):view(shape)
end

-- Integer avg truncates toward zero, as tutti.h's kernels do.
local function reduced(dtype, op, c, b, i)
  local result
  for r = 0, size - 1 do
    local v = value(dtype, op, c, r, b, i)
    if not result then
      result = v
    elseif op == "sum" or op == "avg" then
      result = result + v
    elseif op == "prod" then
      result = result * v
    elseif op == "min" then
      result = math.min(result, v)
    else
      result = math.max(result, v)
    end
  end
  if op ~= "avg" then return result end
  if dtype:find("float") then return result / size end
  local q = result // size
  if q < 0 and q * size ~= result then q = q + 1 end
  return q
end

local function expected_reduction(dtype, op, c, b, shape)
  local list = {}
  for i = 0, numel(shape) - 1 do list[i + 1] = reduced(dtype, op, c, b, i) end
  return list
end

local function tolerance(dtype, op) return op == "avg" and epsilon[dtype] or 0 end

-- Alternates between the module's function and the world's method, so both are tested.
local calls = 0
local function call(name, ...)
  calls = calls + 1
  if calls % 2 == 0 then return tutti[name](...) end
  return world[name](world, ...)
end

local case = 0
for _, dtype in ipairs(dtypes) do
  for _, shape in ipairs(shapes) do
    local n = numel(shape)
    local label = string.format("%s x%d", dtype, n)
    for _, op in ipairs(ops) do
      case = case + 1
      local t = make(dtype, op, case, rank, 0, shape)
      call("all_reduce", t, op)
      check.elements(t, expected_reduction(dtype, op, case, 0, shape), "all_reduce " .. op .. " " .. label,
        tolerance(dtype, op))

      for _, root in ipairs(roots) do
        case = case + 1
        t = make(dtype, op, case, rank, 0, shape)
        call("reduce", t, root, op)
        local expected = rank == root and expected_reduction(dtype, op, case, 0, shape)
          or values(dtype, op, case, rank, 0, shape)
        check.elements(t, expected, string.format("reduce %s root %d %s", op, root, label), tolerance(dtype, op))
      end

      -- reduce_scatter from separate tensors, from the rows of one matrix, and in place
      -- (the output is this rank's row of the input matrix).
      for _, form in ipairs{"list", "rows", "in place"} do
        case = case + 1
        local matrix = tutti.zeros({size, n}, dtype)
        local inputs = {}
        for b = 0, size - 1 do
          inputs[b + 1] = form == "list" and make(dtype, op, case, rank, b, shape) or matrix[b + 1]
          if form ~= "list" then matrix[b + 1] = tutti.tensor(values(dtype, op, case, rank, b, shape), dtype) end
        end
        local out = form == "in place" and matrix[rank + 1] or tutti.zeros(shape, dtype)
        call("reduce_scatter", out, inputs, op)
        check.elements(out, expected_reduction(dtype, op, case, rank, shape),
          string.format("reduce_scatter %s (%s) %s", op, form, label), tolerance(dtype, op))
      end
    end

    for _, root in ipairs(roots) do
      case = case + 1
      local t = make(dtype, "sum", case, rank, 0, shape)
      call("broadcast", t, root)
      check.elements(t, values(dtype, "sum", case, root, 0, shape), string.format("broadcast root %d %s", root, label))

      -- gather and scatter read their lists on the root only: the others' stay as they were.
      case = case + 1
      local gather_list = {}
      for j = 1, size do gather_list[j] = tutti.full(shape, 7, dtype) end
      call("gather", make(dtype, "sum", case, rank, 0, shape), gather_list, root)
      for j = 1, size do
        local expected = rank == root and values(dtype, "sum", case, j - 1, 0, shape) or tutti.full({n}, 7):totable()
        check.elements(gather_list[j], expected, string.format("gather root %d %s, entry %d", root, label, j))
      end

      case = case + 1
      local scatter_list = {}
      for j = 1, size do scatter_list[j] = make(dtype, "sum", case, rank, j - 1, shape) end
      local out = tutti.zeros(shape, dtype)
      call("scatter", out, scatter_list, root)
      check.elements(out, values(dtype, "sum", case, root, rank, shape), string.format("scatter root %d %s", root, label))
    end

    -- all_gather into separate tensors, into the rows of a matrix, and in place (the
    -- input is this rank's row).
    for _, form in ipairs{"list", "rows", "in place"} do
      case = case + 1
      local matrix = tutti.zeros({size, n}, dtype)
      local list = {}
      for j = 1, size do list[j] = form == "list" and tutti.zeros(shape, dtype) or matrix[j] end
      local input = make(dtype, "sum", case, rank, 0, shape)
      if form == "in place" then
        matrix[rank + 1] = input:view(n)
        input = matrix[rank + 1]
      end
      call("all_gather", list, input)
      for j = 1, size do
        check.elements(list[j], values(dtype, "sum", case, j - 1, 0, shape),
          string.format("all_gather (%s) %s, entry %d", form, label, j))
      end
    end

    case = case + 1
    local inputs, outputs = {}, {}
    for j = 1, size do
      inputs[j] = make(dtype, "sum", case, rank, j - 1, shape)
      outputs[j] = tutti.zeros(shape, dtype)
    end
    call("all_to_all", outputs, inputs)
    for j = 1, size do
      check.elements(outputs[j], values(dtype, "sum", case, j - 1, rank, shape),
        string.format("all_to_all %s, from rank %d", label, j - 1))
    end
  end
end

-- all_to_all_single: equal blocks, then rows of 2 cut by split sizes (rank r sends rank
-- j (r + 2j) % 3 rows, some none, each row {1000r + 10j + k, -k}), blocking and async.
local function rows_of(from, to) return (from + 2 * to) % 3 end
for _, dtype in ipairs({"int32", "float64"}) do
  local equal_in, equal_out = {}, {}
  for j = 0, size - 1 do equal_in[j + 1] = 100 * rank + j end
  for i = 0, size - 1 do equal_out[i + 1] = 100 * i + rank end
  local single = tutti.zeros({size}, dtype)
  call("all_to_all_single", single, tutti.tensor(equal_in, dtype))
  check.elements(single, equal_out, "all_to_all_single " .. dtype)

  local sends, receives, input, expected = {}, {}, {}, {}
  for j = 0, size - 1 do
    sends[j + 1] = rows_of(rank, j)
    for k = 0, sends[j + 1] - 1 do
      input[#input + 1] = 1000 * rank + 10 * j + k
      input[#input + 1] = -k
    end
  end
  for i = 0, size - 1 do
    receives[i + 1] = rows_of(i, rank)
    for k = 0, receives[i + 1] - 1 do
      expected[#expected + 1] = 1000 * i + 10 * rank + k
      expected[#expected + 1] = -k
    end
  end
  local x = #input > 0 and tutti.tensor(input, dtype):view({#input // 2, 2}) or tutti.zeros({0, 2}, dtype)
  local out = tutti.zeros({#expected // 2, 2}, dtype)
  call("all_to_all_single", out, x, receives, sends)
  check.elements(out, expected, "all_to_all_single with splits " .. dtype)
  out = tutti.zeros({#expected // 2, 2}, dtype)
  call("all_to_all_single", out, x, receives, sends, {async = true}):wait()
  check.elements(out, expected, "all_to_all_single with splits, async " .. dtype)
end

call("barrier")
call("barrier")
print(string.format("test_collectives: rank %d of %d ran %d calls: ok", rank, size, calls))
