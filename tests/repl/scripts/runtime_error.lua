-- Rank 1 fails once every rank has joined (the first barrier); the others wait for it
-- in a second barrier, and must be stopped (by the launcher) or fail with
-- TUTTI_ERR_PEER_LOST (without one) rather than hang. Without the first barrier, a rank
-- still joining when rank 0, the store's host, has already failed and exited reports
-- the store lost instead.
print("pid " .. io.open("/proc/self/stat"):read("n"))
io.stdout:flush()
tutti.barrier()
if tutti.rank() == 1 then
  error("boom on rank " .. tutti.rank())
end
tutti.barrier()
print("rank " .. tutti.rank() .. " passed a barrier that rank 1 never entered")
