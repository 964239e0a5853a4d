-- 11_heal: training that survives kill -9 of a rank. A linear regression learns
-- y = x . (2, -1, 0.5, 3) + 1 by gradient descent, the samples split across the ranks.
-- When a rank dies, the others' next collective fails with PEER_LOST; they shrink to
-- the survivors, then grow back to the job's size with the process that
-- `tutti launch --restart` started in its place (the tutti runner joins it to the job
-- by itself), and rank 0 broadcasts the weights and the step to it. Training goes on,
-- and at the end every rank holds the same weights (docs/elastic.md).
--
-- Run, rank 2 killing itself at step 40 (with kill -9):
--   tutti launch -n 4 --restart 1 tutti examples/lua/11_heal.lua 2:40
-- or freezing itself (kill -STOP): the others wait until the store declares it lost
-- (TUTTI_HEARTBEAT_TIMEOUT_MS, 20 s by default), and the launcher kills it and starts
-- it again:
--   tutti launch -n 4 --restart 1 tutti examples/lua/11_heal.lua 2:40 STOP
--
-- Prints one line per event:
--   [0] rank 0 of 4: training, 120 steps
--   [0] rank 0 of 4: step 40 failed: PEER_LOST
--   [0] rank 0 of 3: shrank to the 3 survivors
--   [2+1] rank 3 of 4: joined the job
--   [0] rank 0 of 4: grew back to 4 ranks; resuming at step 40
--   [0] rank 0 of 4: done: step 120, weights 2.00 -1.00 0.50 3.00 bias 1.00, identical on every rank
local tutti = require "tutti"

local FEATURES, SAMPLES, STEPS, RATE = 4, 840, 120, 0.1
local TRUE_WEIGHTS, TRUE_BIAS = {2, -1, 0.5, 3}, 1

local kill_rank, kill_step, signal = -1, -1, arg and arg[2] or "KILL"
if arg and arg[1] then
  kill_rank, kill_step = arg[1]:match("^(%d+):(%d+)$")
  assert(kill_rank, "11_heal: give RANK:STEP, the rank that kills itself and when, e.g. 2:40")
  kill_rank, kill_step = tonumber(kill_rank), tonumber(kill_step)
end
assert(signal == "KILL" or signal == "STOP", "11_heal: the signal is KILL or STOP, not " .. signal)

local function say(comm, text) print(("rank %d of %d: %s"):format(comm:rank(), comm:size(), text)) end

-- The same samples on every rank: a 64-bit linear congruential generator from a seed.
local state = 2024
local function uniform()
  state = state * 6364136223846793005 + 1442695040888963407
  return ((state >> 11) + 0.5) / 2 ^ 53 * 2 - 1
end
local xs, ys = {}, {}
for i = 1, SAMPLES do
  local x, y = {}, TRUE_BIAS
  for j = 1, FEATURES do
    x[j] = uniform()
    y = y + TRUE_WEIGHTS[j] * x[j]
  end
  xs[i], ys[i] = x, y + 0.01 * uniform()
end

-- The weights, then the bias, then the step, in one tensor that rank 0 broadcasts.
local model = tutti.zeros(FEATURES + 2, "float64")

-- One step on this rank's samples (every size-th, from its rank on); the gradient
-- averaged over the ranks, so every rank takes the same step.
local function train_step(comm)
  local gradient = tutti.zeros(FEATURES + 1, "float64")
  local mine = 0
  for i = comm:rank() + 1, SAMPLES, comm:size() do
    local error = model[FEATURES + 1] - ys[i]
    for j = 1, FEATURES do error = error + model[j] * xs[i][j] end
    for j = 1, FEATURES do gradient[j] = gradient[j] + 2 * error * xs[i][j] end
    gradient[FEATURES + 1] = gradient[FEATURES + 1] + 2 * error
    mine = mine + 1
  end
  for j = 1, FEATURES + 1 do gradient[j] = gradient[j] / mine end
  comm:all_reduce(gradient, "avg")
  for j = 1, FEATURES + 1 do model[j] = model[j] - RATE * gradient[j] end
  model[FEATURES + 2] = model[FEATURES + 2] + 1
end

local comm = tutti.world()  -- a joiner's is the grown communicator
local joining = os.getenv("TUTTI_JOIN") == "1"
local size = tonumber(os.getenv("TUTTI_WORLD_SIZE")) or comm:size()  -- the job's, to grow back to
local doomed = not joining and comm:rank() == kill_rank
say(comm, joining and "joined the job" or ("training, %d steps"):format(STEPS))
comm:broadcast(model, 0)

while model[FEATURES + 2] < STEPS do
  if doomed and model[FEATURES + 2] == kill_step then
    local pid = io.open("/proc/self/stat"):read("n")  -- this process, the tutti runner
    os.execute(("kill -%s %d"):format(signal, pid))
  end
  local ok, err = pcall(train_step, comm)
  if not ok then
    if type(err) ~= "table" or err.status ~= "PEER_LOST" then error(err, 0) end
    -- The step may have updated the model on some ranks and not on others: rank 0's
    -- model, broadcast below, is the one every rank goes on from.
    say(comm, ("step %d failed: %s"):format(model[FEATURES + 2], err.status))
    do
      local survivors <close> = comm:shrink()  -- destroyed at the end of this block
      say(survivors, ("shrank to the %d survivors"):format(survivors:size()))
      comm = survivors:grow(size - survivors:size())
    end
    comm:broadcast(model, 0)
    say(comm, ("grew back to %d ranks; resuming at step %d"):format(comm:size(), model[FEATURES + 2]))
  end
end

local high, low = model:clone(), model:clone()
comm:all_reduce(high, "max")
comm:all_reduce(low, "min")
local same = true
for j = 1, FEATURES + 2 do same = same and high[j] == model[j] and low[j] == model[j] end
local weights = {}
for j = 1, FEATURES do weights[j] = ("%.2f"):format(model[j]) end
say(comm, ("done: step %d, weights %s bias %.2f, %s on every rank"):format(
  model[FEATURES + 2], table.concat(weights, " "), model[FEATURES + 1], same and "identical" or "DIFFERENT"))
assert(same, "11_heal: the ranks' weights differ")
