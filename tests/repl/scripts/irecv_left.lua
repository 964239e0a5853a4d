-- Rank 0 posts a receive that nobody sends, drops its Work, and ends with the others:
-- the receive fails once rank 1 has ended, and that is said, not lost.
local t = tutti.zeros(4)
if tutti.rank() == 0 then tutti.irecv(t, 1, 99) end
tutti.barrier()
print("end of script on rank " .. tutti.rank())
