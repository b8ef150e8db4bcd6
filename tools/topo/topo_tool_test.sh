#!/usr/bin/env bash
# Tests of mixccl-topo: topo_tool_test.sh MIXCCL_TOPO MIXCCLRUN PYTHON3
#  - the local view as JSON parses and is sane (counts against this machine);
#  - the text view names what it found;
#  - under mixcclrun (3 ranks) every rank's --all JSON shows the same job of 3 ranks on 1 host;
#  - without %r in --output only rank 0 writes;
#  - a bad argument is refused with exit 2.
set -u
TOPO=$1 RUN=$2 PY=$3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TOPO" --json > "$DIR/local.json" || fail "mixccl-topo --json exited $?"
"$PY" - "$DIR/local.json" "$(nproc)" <<'PYEOF' || fail "local JSON"
import json, sys
j = json.load(open(sys.argv[1]))
nproc = int(sys.argv[2])
assert j["schema"] == "mixccl-topology/1" and j["rank"] is None and "global" not in j
l = j["local"]
c = l["counts"]
assert c["packages"] >= 1 and c["numaNodes"] >= 1, c
assert c["pus"] >= nproc and 1 <= c["cores"] <= c["pus"], (c, nproc)
assert len(l["packages"]) == c["packages"] and len(l["numaNodes"]) == c["numaNodes"]
assert any(n["name"] == "lo" and n["virtual"] for n in l["nics"]), l["nics"]
assert isinstance(l["rdma"]["status"], str) and l["rdma"]["status"]
if not l["rdma"]["devices"]:
    assert l["rdma"]["status"].startswith("no RDMA devices"), l["rdma"]["status"]
    assert l["counts"]["rdmaDevices"] == 0
for d in l["rdma"]["devices"]:
    for p in d["ports"]:
        assert p["state"] in (None, "nop", "down", "init", "armed", "active", "active-defer"), p
        assert p["gbps"] is None or p["gbps"] > 0, p
for n in l["nics"]:
    assert n["rdmaPort"] is None or n["rdmaDevice"], n
for i, p in enumerate(l["pci"]):
    assert p["parent"] is None or p["parent"] < i, p
print("local JSON ok:", c)
PYEOF

text=$("$TOPO") || fail "mixccl-topo exited $?"
for want in "package(s)" "NUMA node" "PCI:" "NICs:" "RDMA:" "Accelerators:" "NIC choice:"; do
  echo "$text" | grep -qF "$want" || fail "text view lacks '$want'"
done
# Without RDMA devices the text says so plainly, in the words of the JSON status.
"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["local"]["rdma"]["devices"] else 1)' "$DIR/local.json" ||
  echo "$text" | grep -qE "^RDMA: no RDMA devices \(" || fail "text view does not say there are no RDMA devices"
echo "text view ok"

"$RUN" -n 3 --timeout 60 "$TOPO" --json --all --output "$DIR/job.%r.json" || fail "mixcclrun -n 3 exited $?"
"$PY" - "$DIR" <<'PYEOF' || fail "job JSON"
import json, sys
docs = [json.load(open("%s/job.%d.json" % (sys.argv[1], r))) for r in range(3)]
for r, j in enumerate(docs):
    g = j["global"]
    assert j["rank"] == r
    assert g["nranks"] == 3 and g["nhosts"] == 1, g
    assert g["hosts"][0]["ranks"] == [0, 1, 2], g["hosts"]
    assert [e["rank"] for e in g["ranks"]] == [0, 1, 2]
    assert g == docs[0]["global"]
    assert j["local"]["hostHash"] == g["hosts"][0]["hostHash"]
print("job JSON ok")
PYEOF

"$RUN" -n 2 --timeout 60 "$TOPO" --json --output "$DIR/one.json" || fail "mixcclrun -n 2 exited $?"
[ -s "$DIR/one.json" ] || fail "rank 0 did not write one.json"
[ "$(ls "$DIR" | grep -c '^one')" = 1 ] || fail "more than one file for a pattern without %r"

"$TOPO" --no-such-flag >/dev/null 2>&1
[ $? = 2 ] || fail "an unknown flag is not refused with exit 2"
echo "mixccl-topo tests passed"
