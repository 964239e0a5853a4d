-- For tests/slurm: `fail.lua error R` makes rank R raise an error, `fail.lua kill R`
-- makes rank R kill its own process with SIGKILL, while the other ranks wait for it in
-- an all_reduce. Nothing is printed unless it fails. A barrier first: every rank has
-- then joined, so the others' all_reduce, not their join, is what meets the loss (a
-- rank still joining when the store's host, rank 0, exits would report the store lost).
local tutti = require "tutti"

local how, who = arg[1], tonumber(arg[2])
tutti.barrier()
if tutti.rank() == who then
  if how == "error" then error(("rank %d fails on purpose"):format(who)) end
  -- The tutti process is the shell's parent.
  os.execute("kill -KILL $PPID")
end
tutti.all_reduce(tutti.ones(4), "sum")
