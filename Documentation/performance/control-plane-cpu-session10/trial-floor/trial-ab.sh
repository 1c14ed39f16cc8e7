#!/usr/bin/env bash
# Trial with the floor (A) and without it (B, GP_TRIAL_NOTHING=1 in the experimental build), alternated.
set -u
cd /work/main
for topo_sizes in "4+4 4k,16k" "8+8 1k,4k"; do
  set -- $topo_sizes
  for mode in A B; do
    out=/tmp/s10/trial-$1-$mode
    if [[ $mode == B ]]; then export GP_TRIAL_NOTHING=1; else unset GP_TRIAL_NOTHING; fi
    timeout 1200 bash tools/bench/system/bench-system.sh --build /tmp/s10/bx --topologies $1 --sizes $2 --variants gappaced,mpi-gappaced --reps 3 --no-plot --out $out > $out.log 2>&1
  done
done
unset GP_TRIAL_NOTHING
echo done
