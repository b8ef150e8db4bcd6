#!/bin/sh
# docs/nccl-compat.md lists every call NCCL 2.30.7 exports (a table row per nccl* name).
# usage: check_docs_table.sh DOC REFERENCE_LIST
doc=$1
ref=$2
fail=0
for s in $(grep -v '^#' "$ref" | grep '^nccl'); do
  grep -q "^| \`$s\` |" "$doc" || { echo "FAIL: $s has no row in $(basename "$doc")"; fail=1; }
done
[ $fail = 0 ] && echo "docs table: passed"
exit $fail
