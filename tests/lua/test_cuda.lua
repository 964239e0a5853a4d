-- Device tensors (tutti.cuda_tensor) in the Lua module. Everywhere: a tensor asked for
-- on "cuda" where CUDA is not usable raises "CUDA is not available: ..."; a bad device
-- option is refused; host tensors answer device() and cpu(). With a CUDA device (the
-- part this machine can run is said on one line): round trips, printing, show through
-- a host copy, all_reduce and broadcast on device tensors, and a device tensor refused
-- where only host tensors go.
--   tutti launch -n 2 -- lua5.4 tests/lua/test_cuda.lua
local tutti = require "tutti"
local check = require "check"

local function raises(fn, fragment, what)
  local ok, message = pcall(fn)
  check.truthy(not ok, what .. " raised")
  check.truthy(tostring(message):find(fragment, 1, true), what .. ": \"" .. fragment .. "\" in " .. tostring(message))
  return message
end

do
  local host = tutti.ones{3}
  check.equal(host:device(), "cpu", "host:device()")
  check.equal(host:cpu(), host, "host:cpu() is the tensor itself")
  check.equal(host:to("cpu"), host, "host:to(\"cpu\") is the tensor itself")
  raises(function() return tutti.zeros({2}, {device = "tpu"}) end, "device must be \"cpu\" or \"cuda\"", "device tpu")
  check.equal(tutti.zeros({2}, {device = "cpu"}):device(), "cpu", "zeros with device cpu")
end

local ok, made = pcall(tutti.zeros, {11, 11}, {device = "cuda"})
if not ok then
  check.truthy(tostring(made):find("CUDA is not available: ", 1, true), "without CUDA: " .. tostring(made))
  raises(function() return tutti.ones{2}:cuda() end, "CUDA is not available: ", "t:cuda() without CUDA")
  raises(function() return tutti.ones{2}:to("cuda") end, "CUDA is not available: ", "t:to(\"cuda\") without CUDA")
  if tutti.rank() == 0 then
    print("SKIP: test_cuda.lua: the device-tensor part needs a CUDA device (" .. tostring(made) .. ")")
  end
  return
end

local rank, size = tutti.rank(), tutti.size()
do
  check.equal(made:device(), "cuda", "zeros on cuda")
  check.equal(table.concat(made:shape(), "x"), "11x11", "cuda shape")
  check.equal(made:dtype(), "float32", "cuda dtype")
  check.equal(made:numel(), 121, "cuda numel")
  local back = tutti.arange(6, "int32"):cuda():cpu()
  check.elements(back, {0, 1, 2, 3, 4, 5}, "arange round trip")
  check.truthy(tostring(tutti.ones{2}:cuda()):find("(on cuda)", 1, true), "tostring of a cuda tensor")
  check.equal(tutti.ones{2}:cuda():to("cuda"):device(), "cuda", "to(\"cuda\") on a cuda tensor")
  raises(function() return made:to("int32") end, "convert its dtype on the host", "to(dtype) on a cuda tensor")
  raises(function() return made + 1 end, "tutti.cuda_tensor", "arithmetic on a cuda tensor")
end

do
  local t = tutti.full({4}, rank + 1, {device = "cuda"})
  tutti.all_reduce(t)
  check.elements(t:cpu(), {size * (size + 1) / 2, size * (size + 1) / 2, size * (size + 1) / 2, size * (size + 1) / 2},
                 "all_reduce on cuda", 0)
  local b = tutti.full({3}, rank == 0 and 7 or 0, "int64", {device = "cuda"})
  local work = tutti.broadcast(b, 0, {async = true})
  work:wait()
  check.elements(b:cpu(), {7, 7, 7}, "async broadcast on cuda")
  raises(function() tutti.all_gather({tutti.zeros{1}}, tutti.zeros({1}, {device = "cuda"})) end, "tutti.cuda_tensor",
         "all_gather refuses a cuda tensor")
end
print(string.format("test_cuda.lua: rank %d ok", rank))
