"""Prints this rank's place and the sum of rank + 1 over every rank, through tutti's
Python package, in place.lua's format, for tests/slurm:
  place rank 1 of 4 local 1 of 2 node 0 sum 10
"""
import os

import numpy

import tutti

tutti.init()
total = numpy.array([tutti.rank() + 1], dtype=numpy.int64)
tutti.all_reduce(total, op="sum")
line = (f"place rank {tutti.rank()} of {tutti.world_size()} local {tutti.local_rank()} of {tutti.local_size()} "
        f"node {tutti.node_rank()} sum {int(total[0])}\n")
# One write per line: mpirun forwards each rank's output as it reads it, and a line
# written in pieces can be cut by another rank's.
os.write(1, line.encode())
