#!/bin/sh
# Runs an MPI test program under Open MPI's mpirun: run_mpi.sh NP PROGRAM [ARGS...].
# Exit 77 (ctest: skipped) when mpirun is not installed.
np=$1; shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin)"
  exit 77
fi
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
exec mpirun $root --oversubscribe -np "$np" --mca btl tcp,self --mca btl_tcp_if_include lo \
  -x MIXCCL_PLUGIN_PATH "$@"
