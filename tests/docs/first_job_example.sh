#!/usr/bin/env bash
# docs/first-job.md's program and commands as a user runs them: install the build tree into a
# scratch prefix, take the C program out of the page, build it with the page's pkg-config line
# and run it on 4 ranks under the installed mixcclrun. Prints every rank's line, in rank order.
# usage: first_job_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH MIXCCL_RANK MIXCCL_NRANKS MIXCCL_COMM_ID RANK WORLD_SIZE \
  OMPI_COMM_WORLD_RANK SLURM_PROCID || true
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The page's only C block.
awk '/^```c$/ {on = 1; next} /^```$/ {on = 0} on' "$src/docs/first-job.md" > "$work/sum.c"
grep -q 'mixcclAllReduce' "$work/sum.c"
PKG_CONFIG_PATH="$(dirname "$(find "$work/prefix" -name mixccl-launch.pc | head -1)")"
export PKG_CONFIG_PATH
cd "$work"
cc sum.c $(pkg-config --cflags --libs mixccl-launch) -o sum
"$work/prefix/bin/mixcclrun" -np 4 ./sum | sort   # ranks print in any order; pipefail keeps its status
