-- Works: {async = true} on collectives, isend/irecv, w:wait(timeout_ms) that expires
-- and then succeeds, is_completed polling, lists copied out on completion, a Work
-- dropped while its send still runs (the module must keep the send buffer alive), a
-- to-be-closed Work, and an operation's error raised by wait.
--   tutti launch -n 3 -- lua5.4 tests/lua/test_async.lua
local tutti = require "tutti"
local check = require "check"

local rank, size = tutti.rank(), tutti.size()
-- A second communicator of every rank, for the signals that hold a rank back while
-- another waits on the world: operations on different communicators never wait for
-- each other.
local side = tutti.split(0)
local flag = tutti.zeros(1, "int32")

-- Polls until w:is_completed() or `seconds` pass; returns whether it completed.
local function poll(w, seconds)
  local deadline = os.time() + seconds
  while os.time() <= deadline do
    if w:is_completed() then return true end
  end
  return false
end

-- A collective that cannot finish while rank 1 is held back: wait(50) runs out, the
-- work stays valid, and once rank 1 joins, polling and wait see it done.
do
  local t = tutti.full({11, 11}, rank + 1)
  if rank == 1 then
    side:recv(flag, 0)
    tutti.all_reduce(t, "sum")
  else
    local w = tutti.all_reduce(t, "sum", {async = true})
    check.equal(tostring(w):match("^tutti.work"), "tutti.work", "all_reduce returns a tutti.work")
    if rank == 0 then
      check.equal(w:wait(50), false, "wait(50) while rank 1 is held back")
      check.equal(w:is_completed(), false, "is_completed while rank 1 is held back")
      check.equal(tostring(w), "tutti.work (running)", "tostring of a running work")
      side:send(flag, 1)
    end
    check.truthy(poll(w, 30), "is_completed within 30 s once rank 1 joined")
    check.equal(w:wait(), true, "wait() after completion")
    check.equal(w:wait(0), true, "wait(0) again")
    check.equal(tostring(w), "tutti.work (done)", "tostring of a done work")
  end
  check.elements(t, tutti.full({121}, size * (size + 1) / 2):totable(), "async all_reduce result")
end

-- The same with a receive: irecv waits for a send that rank 1 holds back.
if rank <= 1 then
  local t = tutti.zeros(5, "int64")
  if rank == 0 then
    local w = tutti.irecv(t, 1, 3)
    check.equal(w:wait(30), false, "irecv wait(30) before rank 1 sends")
    side:send(flag, 1)
    check.equal(w:wait(), true, "irecv wait() after rank 1 sent")
    check.elements(t, {10, 20, 30, 40, 50}, "irecv result")
  else
    side:recv(flag, 0)
    local w = tutti.isend(tutti.tensor({10, 20, 30, 40, 50}, "int64"), 0, 3)
    check.equal(w:wait(), true, "isend wait()")
  end
end
tutti.barrier()

-- Async list collectives: the results reach the list's tensors when the work is seen done.
do
  local list = {}
  for j = 1, size do list[j] = tutti.zeros(3, "float16") end
  local w = tutti.all_gather(list, tutti.full({3}, rank + 0.5, "float16"), {async = true})
  check.equal(w:wait(), true, "async all_gather")
  for j = 1, size do check.elements(list[j], {j - 0.5, j - 0.5, j - 0.5}, "async all_gather entry " .. j) end

  local inputs = {}
  for j = 1, size do inputs[j] = tutti.full({2}, rank * 10 + j, "int32") end
  local out = tutti.zeros(2, "int32")
  w = tutti.world():reduce_scatter(out, inputs, "max", {async = true})
  check.truthy(poll(w, 30), "async reduce_scatter completes")
  check.elements(out, {(size - 1) * 10 + rank + 1, (size - 1) * 10 + rank + 1}, "async reduce_scatter")

  local outputs = {}
  for j = 1, size do
    outputs[j] = tutti.zeros(1, "int8")
    inputs[j] = tutti.full({1}, rank * 10 + j, "int8")
  end
  check.equal(tutti.all_to_all(outputs, inputs, {async = true}):wait(), true, "async all_to_all")
  for j = 1, size do check.elements(outputs[j], {(j - 1) * 10 + rank + 1}, "async all_to_all entry " .. j) end

  local gather_list = {}
  for j = 1, size do gather_list[j] = tutti.zeros(1) end
  check.equal(tutti.gather(tutti.full({1}, rank), gather_list, size - 1, {async = true}):wait(), true, "async gather")
  if rank == size - 1 then
    for j = 1, size do check.elements(gather_list[j], {j - 1}, "async gather entry " .. j) end
  end

  local scattered = tutti.zeros(1)
  check.equal(tutti.scatter(scattered, gather_list, size - 1, {async = true}):wait(), true, "async scatter")
  check.elements(scattered, {rank}, "async scatter")

  local b = tutti.full({4}, rank == 0 and 9 or 0)
  check.equal(tutti.broadcast(b, 0, {async = true}):wait(), true, "async broadcast")
  check.elements(b, {9, 9, 9, 9}, "async broadcast")
  local r = tutti.full({1}, 2, "float64")
  check.equal(tutti.reduce(r, 0, "prod", {async = true}):wait(), true, "async reduce")
  check.elements(r, {rank == 0 and 2 ^ size or 2}, "async reduce")
  check.equal(tutti.barrier({async = true}):wait(), true, "async barrier")
end

-- A Work dropped while its send runs: once collected, the module still holds the send
-- buffer, so new allocations cannot reuse its memory before rank 1 receives it. Rank 0
-- then waits on the side communicator only: the runtime does not yet progress a posted
-- send while a blocking call on the same communicator waits.
if rank <= 1 then
  local count = 1 << 20  -- 4 MiB: above any eager copy a transport might make
  if rank == 0 then
    (function() tutti.isend(tutti.arange(count, "int32"), 1, 7) end)()
    collectgarbage()
    collectgarbage()
    local churn = {}
    for i = 1, 16 do churn[i] = tutti.full({count}, -1, "int32") end
    side:send(flag, 1)
    side:recv(flag, 1)
  else
    side:recv(flag, 0)
    local t = tutti.zeros(count, "int32")
    tutti.recv(t, 0, 7)
    side:send(flag, 0)
    check.equal(t:sum(), count * (count - 1) // 2, "the dropped isend's data")
    check.equal(t[count], count - 1, "the dropped isend's last element")
  end
end
tutti.barrier()

-- A to-be-closed Work is waited for at the end of its scope, then released.
do
  local t = tutti.ones(4, "int32")
  local kept
  do
    local w <close> = tutti.all_reduce(t, "sum", {async = true})
    kept = w
  end
  check.elements(t, {size, size, size, size}, "the closed work's result")
  check.equal(tostring(kept), "tutti.work (released)", "tostring after close")
  check.raises("attempt to use a released tutti.work", function() kept:wait() end)
end

-- An operation's error comes out of wait: a receive into too small a tensor.
if rank <= 1 then
  if rank == 0 then
    local w = tutti.irecv(tutti.zeros(2), 1, 9)
    local message = check.raises("TUTTI_ERR_INVALID_ARGUMENT: ", function() w:wait() end)
    check.truthy(message:find("tutti.recv", 1, true), "the error names tutti.recv: " .. message)
    check.raises("TUTTI_ERR_INVALID_ARGUMENT: ", function() w:wait() end)
    check.equal(w:is_completed(), true, "a failed work is completed")
  else
    tutti.send(tutti.zeros(4), 0, 9)
  end
end

print(string.format("test_async: rank %d of %d: ok", rank, size))
