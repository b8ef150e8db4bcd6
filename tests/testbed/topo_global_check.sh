#!/usr/bin/env bash
# mixccl-topo across testbed hosts: 2 hosts x 2 ranks; every rank writes its JSON (--all), and
# each must show the same job: 4 ranks on 2 hosts, ranks 0,1 on one and 2,3 on the other, each
# rank on its host's testbed interface.
#   topo_global_check.sh TESTBED_SH HOST_RANKS_SH MIXCCL_TOPO PYTHON3
set -u
TB=$1 HR=$2 TOPO=$3 PY=$4
"$TB" check || exit $?
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$TB" exec 2 --timeout 60 -- "$HR" 2 "$TOPO" --json --all --output "$DIR/topo.%r.json" || exit 1
"$TB" exec 2 --timeout 60 -- "$HR" 2 "$TOPO" > "$DIR/text.txt" || exit 1
cat "$DIR/text.txt"
"$PY" - "$DIR" <<'PYEOF'
import json, sys
d = sys.argv[1]
docs = [json.load(open("%s/topo.%d.json" % (d, r))) for r in range(4)]
for r, j in enumerate(docs):
    assert j["schema"] == "mixccl-topology/1", j["schema"]
    assert j["rank"] == r, (r, j["rank"])
    g = j["global"]
    assert g["nranks"] == 4 and g["nhosts"] == 2, (g["nranks"], g["nhosts"])
    assert [h["ranks"] for h in g["hosts"]] == [[0, 1], [2, 3]], g["hosts"]
    assert [h["hostname"] for h in g["hosts"]] == ["tbhost0", "tbhost1"], g["hosts"]
    assert g == docs[0]["global"], "rank %d sees another job" % r
    for e in g["ranks"]:
        host = e["rank"] // 2
        assert e["host"] == host, e
        assert e["nic"]["name"] == "mxveth%d" % host, e["nic"]
        assert e["nic"]["selectedBy"] == "socket-default", e["nic"]
    mine = [n for n in j["local"]["nics"] if n["name"] == "mxveth%d" % (r // 2)]
    assert mine and "10.213.0.%d" % (r // 2 + 1) in mine[0]["addresses"], j["local"]["nics"]
    assert mine[0]["virtual"] is True
print("mixccl-topo global view: 4 ranks on 2 hosts, consistent on every rank")
PYEOF
rc=$?
[ $rc = 0 ] || exit 1
grep -q "job: 4 rank(s) on 2 host(s)" "$DIR/text.txt" || { echo "text view lacks the job line" >&2; exit 1; }
