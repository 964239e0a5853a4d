-- The tensor API on one rank: constructors, dtypes, Torch7 indexing and views, methods,
-- arithmetic and its promotions, 16-bit and 8-bit float rounding, tostring, and the tutorial's
-- disk and square to the cell.
--   tutti launch -n 1 -- lua5.4 tests/lua/test_tensor.lua
local tutti = require "tutti"
local check = require "check"

-- Constructors, shapes and dtypes.
do
  local z = tutti.zeros{11, 11}
  check.equal(z:dtype(), "float32", "default dtype")
  check.equal(z:numel(), 121, "zeros{11, 11}:numel()")
  check.equal(#z, 11, "#zeros{11, 11}")
  check.equal(table.concat(z:shape(), "x"), "11x11", "zeros{11, 11}:shape()")
  check.equal(table.concat(tutti.zeros(2, 3, 4):shape(), "x"), "2x3x4", "zeros(2, 3, 4):shape()")
  check.equal(tutti.zeros({2, 2}, "int32"):dtype(), "int32", "zeros with a dtype")
  check.equal(tutti.zeros(3, "uint8"):dtype(), "uint8", "zeros(3, dtype)")
  check.equal(tutti.ones{4}:sum(), 4.0, "ones{4}:sum()")
  check.equal(tutti.full({2, 3}, 7, "int64"):sum(), 42, "full({2, 3}, 7, int64):sum()")
  for _, dtype in ipairs{"int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "float8_e4m3",
    "float8_e5m2"} do
    local t = tutti.full({3}, 5, dtype)
    check.equal(t:dtype(), dtype, "full dtype")
    check.equal(t[2], dtype:find("int") and 5 or 5.0, "full value in " .. dtype)
    check.equal(math.type(t[2]), dtype:find("int") and "integer" or "float", "element type in " .. dtype)
  end
  local scalar = tutti.tensor(2.5)
  check.equal(#scalar:shape(), 0, "tensor(2.5) is 0-d")
  check.equal(scalar:item(), 2.5, "tensor(2.5):item()")
  check.equal(scalar:numel(), 1, "0-d numel")
  check.equal(tutti.full({}, 3):item(), 3.0, "full({}, 3)")
  local m = tutti.tensor({{1, 2, 3}, {4, 5, 6}}, "int32")
  check.equal(table.concat(m:shape(), "x"), "2x3", "tensor{{...}} shape")
  check.equal(m[2][3], 6, "tensor{{...}}[2][3]")
  check.equal(tutti.tensor{}:numel(), 0, "tensor{} is empty")
  check.equal(table.concat(tutti.tensor{{}, {}}:shape(), "x"), "2x0", "tensor{{}, {}} shape")
  check.elements(tutti.arange(5), {0, 1, 2, 3, 4}, "arange(5)")
  check.elements(tutti.arange(2, 8, 3, "int32"), {2, 5}, "arange(2, 8, 3)")
  check.elements(tutti.arange(1, 0, -0.25), {1, 0.75, 0.5, 0.25}, "arange(1, 0, -0.25)")
  check.equal(tutti.arange(3, 3):numel(), 0, "arange(3, 3) is empty")
  check.equal(tutti.zeros(0):numel(), 0, "zeros(0)")
end

-- Indexing (1-based), views that share storage, and assignment.
do
  local t = tutti.zeros{3, 4}
  t[{2, 3}] = 7
  check.equal(t[2][3], 7.0, "t[{2, 3}] = 7 then t[2][3]")
  check.equal(t[{2, 3}], 7.0, "t[{2, 3}]")
  local row = t[2]
  check.equal(table.concat(row:shape(), "x"), "4", "t[2] is a row")
  row[1] = 5
  check.equal(t[{2, 1}], 5.0, "writing a row view writes the tensor")
  t[3][4] = 9
  check.equal(t[{3, 4}], 9.0, "t[3][4] = 9 writes through")
  t[1] = 2
  check.elements(t[1], {2, 2, 2, 2}, "t[1] = 2 fills the row")
  t[1] = tutti.tensor{1, 2, 3, 4}
  check.elements(t[1], {1, 2, 3, 4}, "t[1] = tensor copies into the row")
  local sub = t[{3}]
  check.equal(sub:numel(), 4, "t[{3}] is a row view")
  local cube = tutti.zeros(2, 3, 4)
  cube[2][3][4] = 1
  check.equal(cube[{2, 3, 4}], 1.0, "3-d indexing")
  check.equal(cube:sum(), 1.0, "3-d sum")
  check.raises("index 5 is out of range for dimension 1 of size 4", function() return t[1][5] end)
  check.raises("index 0 is out of range for dimension 1 of size 3; tensor indices are 1-based", function() return t[0] end)
  check.raises("has 3 entries but the tensor has 2 dimensions", function() return t[{1, 1, 1}] end)
  check.raises("cannot index a 0-d tensor", function() return tutti.tensor(1)[1] end)
  check.raises("cannot set field 'x'", function() t.x = 1 end)
  check.raises("cannot copy a tensor of 3 elements (3) into one of 4 elements (4)",
    function() t[1] = tutti.zeros(3) end)
  check.raises("nan in a tensor of int32: integer dtypes hold only finite values", function() tutti.zeros(2, "int32")[1] = 0 / 0 end)
  check.equal(t.nonexistent, nil, "an unknown method name is nil")
end

-- Methods.
do
  local a = tutti.tensor{{1, 2}, {3, 4}}
  local b = a:clone()
  b[1][1] = 10
  check.equal(a[1][1], 1.0, "clone does not share storage")
  check.equal(a:fill(3), a, "fill returns the tensor")
  check.elements(a, {3, 3, 3, 3}, "fill")
  local c = tutti.tensor{1.5, -2.5, 7.9}
  check.elements(c:to("int32"), {1, -2, 7}, "to(int32) truncates toward zero")
  check.equal(c:to("int32"):dtype(), "int32", "to(int32) dtype")
  check.equal(c:max(), 7.900000095367432, "max")
  check.equal(c:min(), -2.5, "min")
  check.equal(tutti.tensor({1, 2, 3}, "int32"):sum(), 6, "int32 sum is an integer")
  check.equal(math.type(tutti.tensor({1, 2, 3}, "int32"):sum()), "integer", "int32 sum type")
  local nested = tutti.tensor({{1, 2}, {3, 4}}, "int64"):totable()
  check.equal(nested[2][1], 3, "totable")
  check.equal(tutti.tensor(4):totable(), 4.0, "totable of 0-d")
  local flat = tutti.arange(6):view{2, 3}
  check.equal(flat[2][1], 3.0, "view{2, 3}")
  flat[1][1] = 42
  check.equal(tutti.arange(6):view(2, 3)[1][1], 0.0, "a new arange is fresh")
  local base = tutti.zeros(6)
  base:view(3, 2)[3][2] = 1
  check.equal(base[6], 1.0, "a view shares storage")
  local dst = tutti.zeros(4, "float64")
  check.equal(dst:copy(tutti.tensor({1, 2, 3, 4}, "int8")), dst, "copy returns the tensor")
  check.elements(dst, {1, 2, 3, 4}, "copy converts dtypes")
  check.raises("item: the tensor has 4 elements", function() return dst:item() end)
  check.raises("max: the tensor is empty", function() return tutti.zeros(0):max() end)
  check.raises("cannot be viewed with a shape of 5 elements", function() return dst:view(5) end)
  -- Shapes whose product wraps around 2^64 to the tensor's numel: accepted, their views
  -- would index far outside the storage.
  check.raises("sizes multiply past int64 (at size 4294967296 in dimension 2)",
    function() return tutti.zeros(0):view(1 << 32, 1 << 32) end)
  check.raises("sizes multiply past int64", function() return tutti.zeros(1):view{3, 11, 0xf83e0f83e0f83e1} end)
  check.equal(tutti.zeros(0):view(0, 1 << 62):numel(), 0, "an empty view with a large size is still empty")
end

-- Arithmetic, promotion and equality.
do
  local a = tutti.tensor{{1, 2}, {3, 4}}
  check.elements(a + 1, {2, 3, 4, 5}, "tensor + number")
  check.elements(10 - a, {9, 8, 7, 6}, "number - tensor")
  check.elements(a * a, {1, 4, 9, 16}, "tensor * tensor")
  check.elements(a / 2, {0.5, 1, 1.5, 2}, "tensor / number")
  check.elements(-a, {-1, -2, -3, -4}, "-tensor")
  local i = tutti.tensor({1, 2}, "int32")
  check.equal((i + 1):dtype(), "int32", "int32 + integer stays int32")
  check.equal((i + 0.5):dtype(), "float32", "int32 + float gives float32")
  check.equal((i / 2):dtype(), "float32", "int32 / integer gives float32")
  check.elements(i / 2, {0.5, 1}, "int32 / 2")
  check.equal((i + tutti.tensor({1, 2}, "float64")):dtype(), "float64", "int32 + float64")
  check.equal((tutti.zeros(1, "int8") + tutti.zeros(1, "uint8")):dtype(), "int32", "int8 + uint8")
  check.equal((tutti.zeros(1, "float16") + tutti.zeros(1, "bfloat16")):dtype(), "float32", "float16 + bfloat16")
  check.equal((tutti.zeros(1, "int64") + tutti.zeros(1, "float16")):dtype(), "float16", "int64 + float16")
  check.equal((tutti.zeros(1, "float8_e4m3") + tutti.zeros(1, "float8_e5m2")):dtype(), "float32", "e4m3 + e5m2")
  check.equal((tutti.zeros(1, "float8_e4m3") + tutti.zeros(1, "bfloat16")):dtype(), "bfloat16", "e4m3 + bfloat16")
  check.elements(tutti.tensor({127}, "int8") + 1, {-128}, "int8 wraps")
  check.elements(tutti.tensor({0}, "uint8") - 1, {255}, "uint8 wraps")
  check.raises("cannot add tensors of shapes 2x2 and 4; shapes must be equal (only a number is broadcast)",
    function() return a + tutti.zeros(4) end)
  check.raises("cannot multiply a tutti.tensor and a string", function() return a * "2" end)
  check.truthy(a == tutti.tensor{{1, 2}, {3, 4}}, "== compares values")
  check.truthy(a == tutti.tensor({{1, 2}, {3, 4}}, "int32"), "== compares values across dtypes")
  check.truthy(a ~= tutti.tensor{{1, 2}, {3, 5}}, "~= when a value differs")
  check.truthy(a ~= tutti.tensor{1, 2, 3, 4}, "~= when the shape differs")
  check.truthy(not rawequal(a, a:clone()), "rawequal is identity")
end

-- 16-bit floats round to nearest even, straight from the double.
do
  local function stored(value, dtype) return tutti.tensor({value}, dtype)[1] end
  check.equal(stored(1 / 3, "float16"), 0.333251953125, "float16 1/3")
  check.equal(stored(65504, "float16"), 65504.0, "float16 max")
  check.equal(stored(65519, "float16"), 65504.0, "float16 65519 rounds down")
  check.equal(stored(65520, "float16"), math.huge, "float16 65520 rounds to inf")
  check.equal(stored(2 ^ -24, "float16"), 2 ^ -24, "float16 smallest subnormal")
  check.equal(stored(2 ^ -25, "float16"), 0.0, "float16 2^-25 ties to even (0)")
  check.equal(stored(3 * 2 ^ -25, "float16"), 2 ^ -23, "float16 3 * 2^-25 ties to even (2^-23)")
  check.equal(stored(1 + 2 ^ -11, "float16"), 1.0, "float16 1 + 2^-11 ties to even (1)")
  check.equal(stored(1 + 3 * 2 ^ -11, "float16"), 1 + 2 ^ -9, "float16 1 + 3 * 2^-11 ties up")
  -- Just above a tie in double, exactly a tie in float: going through float would round down.
  check.equal(stored(1 + 2 ^ -11 + 2 ^ -40, "float16"), 1 + 2 ^ -10, "float16 rounds once")
  check.equal(stored(-2.5, "float16"), -2.5, "float16 negative")
  check.truthy(stored(0 / 0, "float16") ~= stored(0 / 0, "float16"), "float16 NaN")
  check.equal(stored(1 / 3, "bfloat16"), 0.333984375, "bfloat16 1/3")
  check.equal(stored(1 + 2 ^ -8, "bfloat16"), 1.0, "bfloat16 1 + 2^-8 ties to even (1)")
  check.equal(stored(3e38, "bfloat16"), 226 * 2 ^ 120, "bfloat16 large")
  check.equal(stored(-1e39, "bfloat16"), -math.huge, "bfloat16 overflows to -inf")
  check.equal(stored(1e-40, "bfloat16"), 2 ^ -133, "bfloat16 subnormal (1.09 steps of 2^-133)")
end

-- fp8 rounds to nearest even and saturates at its largest finite value, as tutti's
-- reductions do.
do
  local function stored(value, dtype) return tutti.tensor({value}, dtype)[1] end
  check.equal(stored(1 / 3, "float8_e4m3"), 0.34375, "e4m3 1/3")
  check.equal(stored(1 + 2 ^ -4, "float8_e4m3"), 1.0, "e4m3 1 + 2^-4 ties to even (1)")
  check.equal(stored(1 + 3 * 2 ^ -4, "float8_e4m3"), 1.25, "e4m3 1 + 3 * 2^-4 ties up")
  check.equal(stored(464, "float8_e4m3"), 448.0, "e4m3 464 ties to 448")
  check.equal(stored(-1e9, "float8_e4m3"), -448.0, "e4m3 saturates")
  check.equal(stored(math.huge, "float8_e4m3"), 448.0, "e4m3 saturates infinity")
  check.equal(stored(2 ^ -9, "float8_e4m3"), 2 ^ -9, "e4m3 smallest subnormal")
  check.equal(stored(2 ^ -10, "float8_e4m3"), 0.0, "e4m3 2^-10 ties to even (0)")
  check.truthy(stored(0 / 0, "float8_e4m3") ~= stored(0 / 0, "float8_e4m3"), "e4m3 NaN")
  check.equal(stored(1 / 3, "float8_e5m2"), 0.3125, "e5m2 1/3")
  check.equal(stored(1e9, "float8_e5m2"), 57344.0, "e5m2 saturates")
  check.equal(stored(-math.huge, "float8_e5m2"), -57344.0, "e5m2 saturates -infinity")
  check.equal(stored(2 ^ -16, "float8_e5m2"), 2 ^ -16, "e5m2 smallest subnormal")
end

-- tostring, in Torch7's layout.
do
  check.equal(tostring(tutti.tensor({{0, 1, 2}, {10, 0, 1}})),
    "   0   1   2\n  10   0   1\n[tutti.tensor float32 of size 2x3]", "tostring of a matrix")
  check.equal(tostring(tutti.tensor({0.5, -1}, "float64")), "  0.5   -1\n[tutti.tensor float64 of size 2]",
    "tostring with fractions")
  check.equal(tostring(tutti.tensor(3, "int32")), "  3\n[tutti.tensor int32 scalar]", "tostring of 0-d")
  check.equal(tostring(tutti.zeros(2, 1, 2)), "(1,.,.) =\n  0  0\n\n(2,.,.) =\n  0  0\n[tutti.tensor float32 of size 2x1x2]",
    "tostring of 3-d")
  check.equal(tostring(tutti.zeros(0)), "[tutti.tensor float32 of size 0]", "tostring of an empty tensor")
  check.equal(tostring(tutti.zeros(40, 40)),
    "[tutti.tensor float32 of size 40x40; 1600 values not shown: index it or call t:totable()]", "tostring of a big one")
  local picture = tostring(tutti.zeros{11, 11})
  check.equal(#picture:match("^[^\n]*"), 33, "an 11x11 picture of whole numbers is 33 columns wide")
end

-- The tutorial's disk and square: its docstrings' 5x5 examples, then the 11x11 disk of
-- its all_reduce script, disk(image, (3, 3), 2, 1) there, {4, 4} here (1-based).
do
  local function rows(t)
    local lines = {}
    for r = 1, #t do
      local cells = {}
      for c = 1, #t[r] do cells[c] = string.format("%d", t[r][c]) end
      lines[r] = table.concat(cells, " ")
    end
    return table.concat(lines, "\n")
  end
  local image, mask = tutti.disk(tutti.zeros{5, 5}, {3, 3}, 1, 1)
  check.equal(rows(image), "0 0 0 0 0\n0 0 1 0 0\n0 1 1 1 0\n0 0 1 0 0\n0 0 0 0 0", "disk docstring example")
  check.equal(mask:dtype(), "uint8", "disk mask dtype")
  check.truthy(mask == image, "disk mask marks the disk")
  local square = tutti.square(tutti.zeros{5, 5}, {2, 2}, 2, 1)
  check.equal(rows(square), "0 0 0 0 0\n0 1 1 1 0\n0 1 1 1 0\n0 1 1 1 0\n0 0 0 0 0", "square docstring example")
  local zeros = tutti.zeros{11, 11}
  local disk = zeros:disk({4, 4}, 2, 1)
  check.equal(zeros:sum(), 0.0, "disk leaves its input as it was")
  local cells = {}
  for r = 1, 11 do
    for c = 1, 11 do
      if disk[r][c] == 1 then cells[#cells + 1] = string.format("%d,%d", r, c) end
    end
  end
  check.equal(table.concat(cells, " "), "2,4 3,3 3,4 3,5 4,2 4,3 4,4 4,5 4,6 5,3 5,4 5,5 6,4",
    "the all_reduce script's disk((3, 3), radius 2)")
  check.equal(tutti.square(zeros, {4, 4}, 2, 2):sum(), 18.0, "square((3, 3), 2, 2): 3x3 cells of 2")
  check.equal(tutti.square(zeros, {10, 10}, 4, 1):sum(), 4.0, "a square clipped by the edge")
  check.equal(tutti.disk(zeros, {6, 6}, 0, 1):sum(), 0.0, "radius 0 draws nothing, as NumPy's 0/0")
  check.equal(tutti.disk(zeros):sum(), 5.0, "disk defaults: center {2, 2}, radius 1")
  check.equal(tutti.disk(tutti.zeros({3, 3}, "int32"), {2, 2}, 1, 2.9):max(), 2, "value in the matrix's dtype")
  check.raises("bad argument #1 to 'disk' (matrix expected: a 2-d tensor; got 3", function() tutti.disk(tutti.zeros(3)) end)
  check.raises("bad argument #2 to 'square' (topleft expected: {row, column}, two integers, 1-based; got table)",
    function() tutti.square(zeros, {1}) end)
end

print("test_tensor: ok")
