"""Prints this rank's place and the sum of rank + 1 over every rank, through tutti's
Python package, in place.lua's format, for tests/slurm:
  place rank 1 of 4 local 1 of 2 node 0 sum 10
"""
import numpy

import tutti

tutti.init()
total = numpy.array([tutti.rank() + 1], dtype=numpy.int64)
tutti.all_reduce(total, op="sum")
print(f"place rank {tutti.rank()} of {tutti.world_size()} local {tutti.local_rank()} of {tutti.local_size()} "
      f"node {tutti.node_rank()} sum {int(total[0])}", flush=True)
