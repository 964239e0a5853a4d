-- The module table: the world's place, tutti.world(), tutti.print (the tutorials'
-- rank_print), tutti.config(), and a plain lua5.4 outside any launcher, whose first
-- call that needs the world raises the init error.
--   tutti launch -n 3 -- lua5.4 tests/lua/test_module.lua
local tutti = require "tutti"
local check = require "check"

check.equal(require "tutti", tutti, "require returns the same module")
local rank, size = tutti.rank(), tutti.size()
check.equal(rank, tonumber(os.getenv("TUTTI_RANK")), "rank() is the launcher's TUTTI_RANK")
check.equal(size, tonumber(os.getenv("TUTTI_WORLD_SIZE")), "size() is the launcher's TUTTI_WORLD_SIZE")
check.equal(tutti.local_rank(), rank, "local_rank() on one machine")
check.equal(tutti.local_size(), size, "local_size() on one machine")
check.equal(tutti.node_rank(), 0, "node_rank() on one machine")
local world = tutti.world()
check.truthy(rawequal(world, tutti.world()), "world() is always the same tutti.comm")
check.equal(world:rank(), rank, "world():rank()")
check.equal(world:size(), size, "world():size()")
check.equal(world:local_rank(), rank, "world():local_rank()")
check.equal(world:local_size(), size, "world():local_size()")
check.equal(world:node_rank(), 0, "world():node_rank()")
check.equal(tostring(world), string.format("tutti.comm (rank %d of %d)", rank, size), "tostring(world())")

-- tutti.print goes through the global print, in one line: "Rank: R, <text>."
do
  local lines = {}
  local real_print = print
  print = function(...)
    check.equal(select("#", ...), 1, "tutti.print passes print one string")
    lines[#lines + 1] = ...
  end
  tutti.print("test")
  tutti.print("Loss:", 0.5, "Size:", nil)
  tutti.print()
  print = real_print
  check.equal(lines[1], string.format("Rank: %d, test.", rank), "tutti.print(text)")
  check.equal(lines[2], string.format("Rank: %d, Loss: 0.5 Size: nil.", rank), "tutti.print with several values")
  check.equal(lines[3], string.format("Rank: %d, .", rank), "tutti.print()")
end

-- tutti.config(): the TUTTI_* variables that are set; secrets only as "(set)".
do
  local config = tutti.config()
  check.equal(config.TUTTI_RANK, tostring(rank), "config().TUTTI_RANK")
  check.equal(config.TUTTI_WORLD_SIZE, tostring(size), "config().TUTTI_WORLD_SIZE")
  check.equal(config.TUTTI_SECRET, "(set)", "config() hides the secret")
  for name, value in pairs(config) do
    check.truthy(name:find("^TUTTI_"), "config() holds only TUTTI_* names: " .. name)
    check.equal(value, name:find("SECRET") and "(set)" or os.getenv(name), "config()." .. name)
  end
end

-- Outside a launcher, a plain lua5.4 is rank 0 of a world of one, as an MPI singleton.
if rank == 0 then
  local interpreter = arg[-1]
  local command = string.format(
    "env -i LUA_CPATH=%q %q -e 'local t = require(\"tutti\") local x = t.ones{2} t.all_reduce(x) print(t.rank(), t.size(), x:sum())' 2>&1",
    package.cpath, interpreter)
  local pipe = io.popen(command)
  local output = pipe:read("a")
  check.equal(pipe:close(), true, "a plain lua5.4 without a launcher runs: " .. output)
  check.equal(output, "0\t1\t2.0\n", "rank 0 of a world of one")
  -- Tensors need no world.
  pipe = io.popen(string.format("env -i LUA_CPATH=%q %q -e 'print(require(\"tutti\").ones{2}:sum())' 2>&1",
    package.cpath, interpreter))
  output = pipe:read("a")
  check.equal(pipe:close(), true, "tensors without a launcher")
  check.equal(output, "2.0\n", "tensors without a launcher print")
end

tutti.barrier()
print(string.format("test_module: rank %d of %d: ok", rank, size))
