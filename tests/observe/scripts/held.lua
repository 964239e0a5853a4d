-- One rank held in a computation while the others wait for it, for `tutti top`:
-- rank 2 computes (spins) until the file TUTTI_TEST_RELEASE exists, while the others
-- are in the next all_reduce; then rank 1 blocks in a recv from rank 0, which computes
-- until the file TUTTI_TEST_RELEASE2 exists. Bounded: each hold gives up after 60 s.
local function hold(path)
  local deadline = os.time() + 60
  while os.time() < deadline do
    local file = io.open(path)
    if file then
      file:close()
      return
    end
    for _ = 1, 100000 do end
  end
  error("nobody released " .. path)
end

local t = tutti.full({4}, 1)
tutti.all_reduce(t)
if tutti.rank() == 2 then hold(os.getenv("TUTTI_TEST_RELEASE")) end
tutti.all_reduce(t)
if tutti.rank() == 0 then
  hold(os.getenv("TUTTI_TEST_RELEASE2"))
  tutti.send(t, 1, 7)
elseif tutti.rank() == 1 then
  tutti.recv(t, 0, 7)
end
tutti.barrier()
print("done " .. t[1])
