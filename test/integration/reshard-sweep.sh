#!/bin/sh
# Every resharding between two layouts of a tensor of rank 1 to 3 on the
# meshes 4, 2x2, 2x3 and 2x2x2, lowered and run on 8 MPI ranks: each device
# must end with exactly its destination block, and the plan must send the
# bytes the cost model charged (ReshardSweep.cpp).
# Usage: reshard-sweep.sh PARPLAN-RESHARD-SWEEP
set -u
sweep=$1
. "$(dirname "$0")/mpi-setup.sh"
timeout 800 mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np 8 "$sweep"
