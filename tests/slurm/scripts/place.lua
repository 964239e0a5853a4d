-- Prints this rank's place, the sum of rank + 1 over every rank, and what Slurm said
-- (SLURM_LOCALID, SLURM_NODEID, the tasks on this node), for tests/slurm:
--   place rank 1 of 4 local 1 of 2 node 0 sum 10 slurm 1 0 2
local tutti = require "tutti"

-- "2(x3),1" -> the count for node `node` (0-based), as Slurm writes tasks per node.
local function tasks_on_node(layout, node)
  local index = 0
  for count, times in layout:gmatch("(%d+)%(?x?(%d*)%)?") do
    index = index + (times ~= "" and tonumber(times) or 1)
    if node < index then return tonumber(count) end
  end
end

local sum = tutti.tensor({tutti.rank() + 1}, "int64")
tutti.all_reduce(sum, "sum")
local node = tonumber(os.getenv("SLURM_NODEID") or "-1")
local layout = os.getenv("SLURM_STEP_TASKS_PER_NODE") or ""
print(("place rank %d of %d local %d of %d node %d sum %d slurm %s %d %s"):format(tutti.rank(), tutti.size(),
  tutti.local_rank(), tutti.local_size(), tutti.node_rank(), sum:item(), os.getenv("SLURM_LOCALID") or "-",
  node, tasks_on_node(layout, node) or "-"))
