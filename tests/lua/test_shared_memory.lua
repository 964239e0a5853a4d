-- mem_alloc: tensors in memory that every rank of a communicator on this node maps,
-- which large collectives read in place: zeros of the shape and dtype asked for;
-- all_reduce, broadcast, reduce and all_gather on them, on the world and on a split;
-- a split closed while a tensor over its memory lives is unusable but keeps that
-- tensor readable; bad arguments. The shm group's tests prove the in-place paths,
-- this one the binding.
--   tutti launch -n 3 -- lua5.4 tests/lua/test_shared_memory.lua
local tutti = require "tutti"
local check = require "check"

local rank, size = tutti.rank(), tutti.size()
local n = 1 << 16  -- float32: 256 KiB, which the collectives read in place

local t = tutti.mem_alloc({n})
check.equal(t:numel(), n, "mem_alloc's numel")
check.equal(t:dtype(), "float32", "mem_alloc's default dtype")
check.equal(t:max(), 0.0, "mem_alloc's tensor starts at zeros")
check.equal(t:min(), 0.0, "mem_alloc's tensor starts at zeros")

t:copy(tutti.arange(n) * (rank + 1))
tutti.all_reduce(t)
check.elements(t, (tutti.arange(n) * (size * (size + 1) // 2)):totable(), "all_reduce in place")

t:fill(rank)
tutti.broadcast(t, size - 1)
check.equal(t:min(), size - 1.0, "broadcast from the last rank")
check.equal(t:max(), size - 1.0, "broadcast from the last rank")

local counts = tutti.mem_alloc({4, n // 4}, "int64")
check.equal(counts:dtype(), "int64", "mem_alloc's dtype")
check.equal(#counts:shape(), 2, "mem_alloc's shape")
counts:fill(rank + 1)
tutti.reduce(counts, 0, "sum")
check.equal(counts:min(), rank == 0 and size * (size + 1) // 2 or rank + 1, "reduce to rank 0")

local gathered = {}
for j = 1, size do gathered[j] = tutti.zeros(n) end
t:fill(rank)
tutti.all_gather(gathered, t)
for j = 1, size do
  check.equal(gathered[j]:min(), j - 1.0, "all_gather from shared memory, entry " .. j)
  check.equal(gathered[j]:max(), j - 1.0, "all_gather from shared memory, entry " .. j)
end

-- A split closed while a tensor over its memory lives: unusable at once, its memory
-- kept until the tensor is collected, which every rank does at the same point.
local kept, closed
do
  local parity <close> = tutti.split(rank % 2)
  kept = parity:mem_alloc({n}, "int32")
  kept:fill(rank)
  parity:all_reduce(kept, "max")
  closed = parity
end
local highest = rank % 2
for r = rank % 2, size - 1, 2 do highest = r end
check.equal(tostring(closed), "tutti.comm (destroyed)", "tostring of a closed comm")
check.raises("attempt to use a destroyed tutti.comm", function() closed:mem_alloc({4}) end)
check.equal(kept:min(), highest, "a tensor over a closed comm's memory")
check.equal(kept:max(), highest, "a tensor over a closed comm's memory")
kept = nil
collectgarbage()
tutti.barrier()

check.raises("mem_alloc needs at least one element", function() tutti.mem_alloc({0}) end)
check.raises("dtype expected", function() tutti.mem_alloc({4}, "complex") end)

tutti.barrier()
print(string.format("test_shared_memory: rank %d of %d: ok", rank, size))
