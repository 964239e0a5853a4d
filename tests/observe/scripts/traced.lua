-- What the trace's test traces: every collective, blocking and nonblocking
-- point-to-point in a ring, an asynchronous collective, a split with a collective on
-- it, and a failure (the odd ranks' split all_reduces tensors of different sizes,
-- which TUTTI_CHECK=1 makes a MISMATCH on both). Each rank prints how many
-- collectives it ran on each communicator, which the test compares with the trace.
local rank, size = tutti.rank(), tutti.size()
local t = tutti.full({8}, rank)
local list, inputs = {}, {}
for j = 1, size do
  list[j] = tutti.zeros(8)
  inputs[j] = tutti.full({8}, rank * size + j)
end
local out = tutti.zeros(8)

tutti.all_reduce(t)
tutti.reduce(t, 0)
tutti.broadcast(t, 1)
tutti.all_gather(list, t)
tutti.reduce_scatter(out, inputs, "sum")
tutti.gather(t, rank == 0 and list or nil, 0)
tutti.scatter(out, rank == 0 and inputs or nil, 0)
tutti.all_to_all(list, inputs)
tutti.barrier()
tutti.all_reduce(t, "max", {async = true}):wait()
local world_collectives = 10

-- A ring, blocking (evens send first) then nonblocking.
local from, to = (rank - 1) % size, (rank + 1) % size
local incoming = tutti.zeros(8)
if rank % 2 == 0 then
  tutti.send(t, to, 5)
  tutti.recv(incoming, from, 5)
else
  tutti.recv(incoming, from, 5)
  tutti.send(t, to, 5)
end
local receiving = tutti.irecv(incoming, from, 6)
local sending = tutti.isend(t, to, 6)
receiving:wait()
sending:wait()
-- A wait that surely waits: rank 1 computes for 200 ms before it sends.
if rank == 0 then
  tutti.irecv(incoming, 1, 7):wait()
elseif rank == 1 then
  local until_time = os.clock() + 0.2
  while os.clock() < until_time do end
  tutti.send(t, 0, 7)
end

local split_collectives = 1
do
  local parity <close> = tutti.split(rank % 2)
  parity:all_reduce(t)
  if rank % 2 == 1 then
    local ok, err = pcall(parity.all_reduce, parity, tutti.zeros(rank == 1 and 8 or 4))
    assert(not ok and err.status == "MISMATCH", "the odd ranks' all_reduce of different sizes: " .. tostring(err))
    split_collectives = 2
  end
end
tutti.barrier()
world_collectives = world_collectives + 1
print(string.format("collectives world %d split %d", world_collectives, split_collectives))
