#!/usr/bin/env bash
# Self-test of testbed.sh: testbed_selftest.sh TESTBED_SH PYTHON3
# Exits 77 (skip) where the testbed cannot be built, 1 on the first failed check.
set -u
TB=$1
PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
P="mxst$$"

"$TB" check || exit $?
fail() { echo "FAIL: $*" >&2; "$TB" down --prefix "$P" >/dev/null 2>&1; exit 1; }
ok() { echo "ok: $*"; }
trap '"$TB" down --prefix "$P" >/dev/null 2>&1' EXIT
nsl() { ip netns list | awk '{print $1}'; }

# --- up / run / down -------------------------------------------------------------------------
"$TB" up 3 --prefix "$P" || fail "up 3"
for n in sw h0 h1 h2; do nsl | grep -qx "$P$n" || fail "namespace $P$n missing"; done
ok "up 3 made 4 namespaces"
"$TB" run 1 --prefix "$P" ip -4 -o addr show | grep -q "mxveth1 .*inet 10.213.0.2/24" ||
  fail "host 1 does not have 10.213.0.2/24 on mxveth1"
links=$("$TB" run 0 --prefix "$P" ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
[ "$links" = "lo mxveth0 " ] || fail "host 0 has links '$links', expected only lo and mxveth0"
"$TB" run 2 --prefix "$P" ip -o link show lo | grep -q "UP" || fail "lo is not up in host 2"
env_seen=$("$TB" run 2 --prefix "$P" sh -c 'echo $MIXCCL_TESTBED_HOST $MIXCCL_TESTBED_ADDR $MIXCCL_SOCKET_IFNAME')
[ "$env_seen" = "2 10.213.0.3 =mxveth2" ] || fail "host 2 environment: '$env_seen'"
[ "$("$TB" run 1 --prefix "$P" cat /proc/sys/kernel/hostname)" = tbhost1 ] ||
  fail "host 1 is not named tbhost1"
ok "addresses, links, hostnames and environment"
# Isolation: only the private /24 is routable from a host (a route lookup sends nothing).
"$TB" run 0 --prefix "$P" ip route get 10.213.0.3 >/dev/null || fail "no route inside the testbed"
if "$TB" run 0 --prefix "$P" ip route get 192.0.2.1 >/dev/null 2>&1; then
  fail "a host has a route out of the testbed"
fi
ok "hosts reach each other and nothing else"
# Connectivity between namespaces through the bridge.
"$TB" run 2 --prefix "$P" "$PY" -c '
import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.213.0.3", 40001)); s.listen(2); s.settimeout(20)
for _ in range(2):
    c, a = s.accept(); c.sendall(("hello " + a[0]).encode()); c.close()' &
server=$!
for h in 0 1; do
  reply=$("$TB" run $h --prefix "$P" "$PY" -c '
import socket, time
for _ in range(200):
    try:
        c = socket.create_connection(("10.213.0.3", 40001), timeout=2); break
    except OSError: time.sleep(0.05)
print(c.recv(100).decode())')
  [ "$reply" = "hello 10.213.0.$((h + 1))" ] || fail "host $h got '$reply' from host 2"
done
wait $server || fail "server in host 2 failed"
ok "TCP across the bridge between hosts 0, 1 and 2"
"$TB" down --prefix "$P" || fail "down"
[ -z "$(nsl | grep "^$P")" ] || fail "namespaces left after down"
ok "down removed everything"

# --- exec: failures are reported, timeouts bound the run -----------------------------------------
out=$("$TB" exec 3 -- sh -c 'exit {i}' 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "exec succeeded although hosts 1 and 2 failed"
echo "$out" | grep -q "host 1 failed (exit 1" || fail "host 1's failure not reported: $out"
echo "$out" | grep -q "host 2 failed (exit 2" || fail "host 2's failure not reported: $out"
echo "$out" | grep -q "host 0 failed" && fail "host 0 reported failed: $out"
ok "exec reports each failing host"
t0=$(date +%s)
out=$("$TB" exec 2 --timeout 1 -- sleep 30 2>&1)
rc=$?
t1=$(date +%s)
[ $rc -ne 0 ] || fail "a timed-out exec succeeded"
[ $((t1 - t0)) -lt 15 ] || fail "--timeout 1 took $((t1 - t0))s"
echo "$out" | grep -q "exit 124" || fail "timeout not reported as 124: $out"
ok "exec --timeout stops the run ($((t1 - t0))s)"

# --- shaping: tbf bounds the rate ----------------------------------------------------------------
rate() { echo "$1" | sed -n 's/.*= \([0-9.]*\) Mbit\/s.*/\1/p' | head -1; }
free=$("$TB" exec 2 -- "$PY" "$HERE/tb_stream.py" 4000000 2>&1) || fail "unshaped stream: $free"
shaped=$("$TB" exec 2 --bw 20mbit --burst 32kb --latency 100ms -- "$PY" "$HERE/tb_stream.py" 4000000 2>&1) ||
  fail "shaped stream: $shaped"
rf=$(rate "$free")
rs=$(rate "$shaped")
echo "unshaped: $rf Mbit/s, tbf 20mbit: $rs Mbit/s"
[ -n "$rf" ] && [ -n "$rs" ] || fail "no rate measured: $free / $shaped"
"$PY" -c "import sys; rs, rf = float('$rs'), float('$rf'); sys.exit(0 if 12 <= rs <= 23 and rf > 3 * rs else 1)" ||
  fail "tbf 20mbit gave $rs Mbit/s (unshaped $rf)"
ok "tbf 20mbit limits the link to $rs Mbit/s"

# --- teardown when terminated, and after SIGKILL -------------------------------------------------
wait_ns() {  # prefix present(1)/absent(0)
  for _ in $(seq 1 100); do
    if [ "$2" = 1 ]; then nsl | grep -q "^$1h0\$" && return 0; else nsl | grep -q "^$1" || return 0; fi
    sleep 0.1
  done
  return 1
}
"$TB" exec 2 -- sleep 60 >/dev/null 2>&1 &
pid=$!
wait_ns "mx$pid" 1 || fail "exec did not come up"
kill -TERM $pid
wait $pid
wait_ns "mx$pid" 0 || fail "SIGTERM left namespaces of mx$pid"
ok "SIGTERM tears down"
"$TB" exec 2 -- sleep 60 >/dev/null 2>&1 &
pid=$!
wait_ns "mx$pid" 1 || fail "exec did not come up"
kill -KILL $pid
wait $pid 2>/dev/null
nsl | grep -q "^mx${pid}h0\$" || fail "expected namespaces left by SIGKILL"
"$TB" cleanup
wait_ns "mx$pid" 0 || fail "cleanup left namespaces of mx$pid"
ok "cleanup removes what a SIGKILLed run left"
echo "testbed self-test passed"
