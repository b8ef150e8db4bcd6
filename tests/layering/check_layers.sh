#!/usr/bin/env bash
# The build's layer rule (src/CMakeLists.txt, docs/architecture.md "Layers"): a layer compiles
# against a view of the folders below it only. For each (layer, header) pair given, compiles a
# one-line file that includes the header with that layer's view and checks the outcome:
#   ok:<layer>:<header>      must compile (a header of the layer itself or of one below)
#   refused:<layer>:<header> must fail with "<header>: No such file or directory"
# Usage: check_layers.sh <c++ compiler> <views dir> <include dir> <case>...
set -u
cxx=$1 views=$2 include=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
for c in "$@"; do
  IFS=: read -r want layer header <<<"$c"
  view="$views/$layer"
  if [ ! -d "$view" ]; then
    echo "FAIL $c: no view $view"; failures=$((failures + 1)); continue
  fi
  printf '#include "%s"\n' "$header" >"$tmp/probe.cc"
  out=$("$cxx" -std=c++17 -fsyntax-only -I"$view" -I"$include" "$tmp/probe.cc" 2>&1)
  rc=$?
  case $want in
    ok)
      if [ $rc -eq 0 ]; then echo "ok   $layer sees $header"
      else echo "FAIL $layer should see $header:"; echo "$out" | head -5; failures=$((failures + 1)); fi ;;
    refused)
      # gcc: "<header>: No such file or directory"; clang: "'<header>' file not found".
      if [ $rc -ne 0 ] && grep -qE "$header(: No such file or directory|' file not found)" <<<"$out"; then
        echo "ok   $layer cannot include $header"
      else
        echo "FAIL $layer included $header (rc $rc):"; echo "$out" | head -5; failures=$((failures + 1))
      fi ;;
    *) echo "FAIL unknown case $c"; failures=$((failures + 1)) ;;
  esac
done
echo "$(( $# - failures )) passed, $failures failed"
[ $failures -eq 0 ]
