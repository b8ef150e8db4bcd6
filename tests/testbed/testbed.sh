#!/usr/bin/env bash
# A multi-host testbed on one machine: K "hosts" are network namespaces, each with its own
# address, joined through a bridge that lives in a namespace of its own; each host's link can be
# shaped with tc tbf. Nothing is added to the namespace the script is started in, and no address
# outside the testbed's private /24 is ever used. docs/testbed.md.
#
#   testbed.sh up K [--bw RATE --burst B --latency L] [--prefix P]
#   testbed.sh run HOST_INDEX [--prefix P] CMD...
#   testbed.sh down [--prefix P]
#   testbed.sh exec K [--bw RATE --burst B --latency L] [--timeout S] [--port N] -- CMD-TEMPLATE...
#   testbed.sh check          exit 0 when the testbed can be built here, 77 (with why) when not
#   testbed.sh cleanup        remove what killed exec runs left behind
#
# exec brings K hosts up under a fresh prefix (mx<pid>), runs CMD-TEMPLATE once in every host in
# parallel, waits, always tears down (also on error, Ctrl-C, SIGTERM), and exits non-zero if any
# host's command failed. In CMD-TEMPLATE {i} is the host index, {addr} its address, {ifname} its
# interface, {host0} host 0's address, {nhosts} K. Every command runs with the hostname
# tbhost<i> (its own UTS namespace) and sees
#   MIXCCL_TESTBED_HOST, MIXCCL_TESTBED_HOSTNAME, MIXCCL_TESTBED_NHOSTS, MIXCCL_TESTBED_ADDR, MIXCCL_TESTBED_HOST0_ADDR,
#   MIXCCL_SOCKET_IFNAME==<its interface>, MIXCCL_COMM_ID=<host0>:<port> and a
#   MIXCCL_COMM_SECRET shared by the hosts of the run.
#
# Exit codes: 0 success, 1 a command or a step failed, 2 usage, 77 cannot run here (not root,
# no network namespaces, no veth/bridge, or shaping asked for and tc tbf unavailable).
set -u

SKIP=77
SUBNET=${MIXCCL_TESTBED_SUBNET:-0}
NET="10.213.${SUBNET}"
STALE_RE='^mx(st)?[0-9]+(sw|probe|h[0-9]+)$'  # exec runs, probes, the self-test

die() { echo "testbed: $*" >&2; exit 1; }
usage() { sed -n '7,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs_since() { local d=$(( $(now_ms) - $1 )); printf '%d.%03d' $((d / 1000)) $((d % 1000)); }

addr_of() { echo "${NET}.$(( $1 + 1 ))"; }
ifname_of() { echo "mxveth$1"; }
host_ns() { echo "${PREFIX}h$1"; }
switch_ns() { echo "${PREFIX}sw"; }

# Namespaces whose name starts with the prefix, exactly as the testbed names them.
namespaces_of() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1(sw|h[0-9]+)\$" || true
}

# Stops what runs inside a namespace (only processes this testbed started there), then removes it.
remove_ns() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null)
  if [ -n "$pids" ]; then
    kill -TERM $pids 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      pids=$(ip netns pids "$ns" 2>/dev/null)
      [ -z "$pids" ] && break
      sleep 0.2
    done
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  fi
  ip netns del "$ns" 2>/dev/null
}

teardown() {
  local ns
  for ns in $(namespaces_of "$1"); do remove_ns "$ns"; done
}

# exec runs killed by SIGKILL (a CTest timeout) cannot clean up; their prefix names a dead pid.
cleanup_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "$STALE_RE"); do
    pid=${ns#mx}
    pid=${pid#st}
    pid=${pid%%[hsp]*}
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "testbed: removing stale namespace $ns (pid $pid is gone)" >&2
      remove_ns "$ns"
    fi
  done
  local dir
  for dir in "${TMPDIR:-/tmp}"/mixccl-testbed.*.*; do
    [ -d "$dir" ] || continue
    pid=${dir##*/mixccl-testbed.}
    pid=${pid%%.*}
    kill -0 "$pid" 2>/dev/null || rm -rf "$dir"
  done
}

# Exits 77 with the reason when namespaces, veth pairs or bridges cannot be made here.
check_privileges() {
  local shaping=$1 probe="mx$$probe"
  if [ "$(id -u)" != 0 ]; then
    echo "testbed: SKIP: needs root (network namespaces); running as uid $(id -u)" >&2
    exit $SKIP
  fi
  command -v ip >/dev/null || { echo "testbed: SKIP: iproute2 (ip) is not installed" >&2; exit $SKIP; }
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "testbed: SKIP: 'ip netns add' failed: network namespaces unavailable here" >&2
    exit $SKIP
  fi
  local why=""
  if ! ip -n "$probe" link add mxpa type veth peer name mxpb 2>/dev/null; then
    why="cannot create veth pairs"
  elif ! ip -n "$probe" link add mxbr type bridge 2>/dev/null; then
    why="cannot create bridges"
  elif [ "$shaping" = 1 ]; then
    if ! command -v tc >/dev/null; then
      why="shaping asked for but tc is not installed"
    elif ! tc -n "$probe" qdisc add dev mxpa root tbf rate 10mbit burst 32kbit latency 50ms 2>/dev/null; then
      why="shaping asked for but the tbf qdisc is unavailable"
    fi
  fi
  ip netns del "$probe" 2>/dev/null
  if [ -n "$why" ]; then
    echo "testbed: SKIP: $why" >&2
    exit $SKIP
  fi
}

shape() {  # ns dev
  tc -n "$1" qdisc replace dev "$2" root tbf rate "$BW" burst "$BURST" latency "$LATENCY" ||
    return 1
}

bring_up() {
  local k=$1 i ns sw
  sw=$(switch_ns)
  ip netns add "$sw" || return 1
  ip -n "$sw" link set lo up &&
    ip -n "$sw" link add br0 type bridge &&
    ip -n "$sw" link set br0 up || return 1
  for ((i = 0; i < k; i++)); do
    ns=$(host_ns $i)
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up &&
      ip -n "$sw" link add "p$i" type veth peer name "$(ifname_of $i)" netns "$ns" &&
      ip -n "$sw" link set "p$i" master br0 &&
      ip -n "$sw" link set "p$i" up &&
      ip -n "$ns" addr add "$(addr_of $i)/24" dev "$(ifname_of $i)" &&
      ip -n "$ns" link set "$(ifname_of $i)" up || return 1
    if [ -n "$BW" ]; then
      # Both directions of the host's link: its own egress and the bridge port towards it.
      shape "$ns" "$(ifname_of $i)" && shape "$sw" "p$i" || return 1
    fi
  done
  # Wait until every host's interface reports carrier (veth peers come up asynchronously).
  for ((i = 0; i < k; i++)); do
    local tries=0
    until ip -n "$(host_ns $i)" link show "$(ifname_of $i)" 2>/dev/null | grep -q 'LOWER_UP'; do
      tries=$((tries + 1))
      [ $tries -gt 50 ] && { echo "testbed: $(ifname_of $i) has no carrier" >&2; return 1; }
      sleep 0.1
    done
  done
  return 0
}

parse_shaping() {  # sets BW BURST LATENCY; leaves the remaining args in REST
  BW="" BURST="" LATENCY="" TIMEOUT="" PORT=29500
  REST=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --bw) BW=${2:?--bw needs a rate}; shift 2 ;;
      --burst) BURST=${2:?--burst needs a size}; shift 2 ;;
      --latency) LATENCY=${2:?--latency needs a time}; shift 2 ;;
      --timeout) TIMEOUT=${2:?--timeout needs seconds}; shift 2 ;;
      --port) PORT=${2:?--port needs a number}; shift 2 ;;
      --prefix) PREFIX=${2:?--prefix needs a name}; shift 2 ;;
      --) shift; REST=("$@"); return 0 ;;
      *) REST=("$@"); return 0 ;;  # the command starts at the first non-option
    esac
  done
}

shaping_defaults() {
  if [ -n "$BW" ]; then
    BURST=${BURST:-64kb}
    LATENCY=${LATENCY:-50ms}
  elif [ -n "$BURST$LATENCY" ]; then
    echo "testbed: --burst and --latency need --bw" >&2
    exit 2
  fi
}

valid_k() {
  case "$1" in '' | *[!0-9]*) echo "testbed: K must be a number, not '$1'" >&2; exit 2 ;; esac
  [ "$1" -ge 1 ] && [ "$1" -le 250 ] || { echo "testbed: K must be 1..250" >&2; exit 2; }
}

hostname_of() { echo "tbhost$1"; }

# Runs "$@" with the host's own hostname: a UTS namespace per command, so that each testbed host
# has its own name like a real one (needs unshare from util-linux; without it the name is shared).
with_hostname() {  # i cmd...
  local i=$1
  shift
  if command -v unshare >/dev/null; then
    unshare --uts -- sh -c 'echo "$0" > /proc/sys/kernel/hostname && exec "$@"' \
      "$(hostname_of "$i")" "$@"
  else
    "$@"
  fi
}

host_env() {  # i -> env assignments for a host's commands
  local i=$1
  echo "MIXCCL_TESTBED_HOST=$i" "MIXCCL_TESTBED_HOSTNAME=$(hostname_of "$i")" "MIXCCL_TESTBED_NHOSTS=$K" "MIXCCL_TESTBED_ADDR=$(addr_of $i)" \
    "MIXCCL_TESTBED_HOST0_ADDR=$(addr_of 0)" "MIXCCL_SOCKET_IFNAME==$(ifname_of $i)"
}

substitute() {  # i arg -> the arg with {i} {addr} {ifname} {host0} {nhosts} replaced
  local i=$1 a=$2
  a=${a//\{i\}/$i}
  a=${a//\{addr\}/$(addr_of $i)}
  a=${a//\{ifname\}/$(ifname_of $i)}
  a=${a//\{host0\}/$(addr_of 0)}
  a=${a//\{nhosts\}/$K}
  printf '%s' "$a"
}

cmd=${1:-}
[ -n "$cmd" ] || usage
shift
PREFIX=${MIXCCL_TESTBED_PREFIX:-mxtb}

case "$cmd" in
  check)
    parse_shaping "$@"
    check_privileges "$([ -n "$BW" ] && echo 1 || echo 0)"
    echo "testbed: network namespaces, veth pairs and bridges are available"
    ;;

  cleanup)
    [ "$(id -u)" = 0 ] || { echo "testbed: SKIP: needs root" >&2; exit $SKIP; }
    cleanup_stale
    ;;

  up)
    K=${1:-}
    valid_k "$K"
    shift
    parse_shaping "$@"
    [ ${#REST[@]} -eq 0 ] || usage
    shaping_defaults
    check_privileges "$([ -n "$BW" ] && echo 1 || echo 0)"
    [ -z "$(namespaces_of "$PREFIX")" ] || die "a testbed with prefix $PREFIX is up; run 'down' first"
    if ! bring_up "$K"; then
      teardown "$PREFIX"
      die "bringing up $K hosts failed (torn down)"
    fi
    for ((i = 0; i < K; i++)); do
      echo "host $i: namespace $(host_ns $i) interface $(ifname_of $i) address $(addr_of $i)"
    done
    ;;

  run)
    I=${1:-}
    shift || true
    parse_shaping "$@"
    case "$I" in '' | *[!0-9]*) usage ;; esac
    [ ${#REST[@]} -gt 0 ] || usage
    ns=$(host_ns "$I")
    ip netns list | awk '{print $1}' | grep -qx "$ns" || die "no host $I (namespace $ns) is up"
    K=$(namespaces_of "$PREFIX" | grep -c "h[0-9]*$")
    # shellcheck disable=SC2046
    with_hostname "$I" ip netns exec "$ns" env $(host_env "$I") "${REST[@]}"
    ;;

  down)
    parse_shaping "$@"
    teardown "$PREFIX"
    [ -z "$(namespaces_of "$PREFIX")" ] || die "namespaces with prefix $PREFIX remain"
    ;;

  exec)
    K=${1:-}
    valid_k "$K"
    shift
    parse_shaping "$@"
    [ ${#REST[@]} -gt 0 ] || usage
    shaping_defaults
    PREFIX="mx$$"
    check_privileges "$([ -n "$BW" ] && echo 1 || echo 0)"
    cleanup_stale
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/mixccl-testbed.$$.XXXXXX") || die "mktemp failed"
    PIDS=()
    on_exit() {
      local p
      for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
      teardown "$PREFIX"
      rm -rf "$WORK"
    }
    trap on_exit EXIT
    trap 'echo "testbed: interrupted" >&2; exit 130' INT
    trap 'echo "testbed: terminated" >&2; exit 143' TERM
    SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    start=$(now_ms)
    bring_up "$K" || die "bringing up $K hosts failed"
    up_s=$(secs_since "$start")
    echo "testbed: $K hosts up (prefix $PREFIX, ${NET}.0/24${BW:+, tbf rate $BW burst $BURST latency $LATENCY}) in ${up_s}s"
    for ((i = 0; i < K; i++)); do
      args=()
      for a in "${REST[@]}"; do args+=("$(substitute $i "$a")"); done
      runner=()
      [ -n "$TIMEOUT" ] && runner=(timeout --kill-after=5 "$TIMEOUT")
      (
        # shellcheck disable=SC2046
        with_hostname $i ip netns exec "$(host_ns $i)" env $(host_env $i) \
          "MIXCCL_COMM_ID=$(addr_of 0):$PORT" "MIXCCL_COMM_SECRET=$SECRET" \
          "${runner[@]}" "${args[@]}" 2>&1 | sed -u "s/^/[h$i] /"
        echo "${PIPESTATUS[0]}" >"$WORK/rc.$i"
      ) &
      PIDS+=($!)
    done
    for p in "${PIDS[@]}"; do wait "$p"; done
    PIDS=()
    failed=0
    for ((i = 0; i < K; i++)); do
      rc=$(cat "$WORK/rc.$i" 2>/dev/null || echo "?")
      if [ "$rc" != 0 ]; then
        echo "testbed: host $i failed (exit $rc${TIMEOUT:+; 124 = timed out after ${TIMEOUT}s})" >&2
        failed=1
      fi
    done
    total_s=$(secs_since "$start")
    echo "testbed: $( [ $failed = 0 ] && echo "all $K hosts succeeded" || echo "FAILED")" \
      "(${total_s}s including setup)"
    exit $failed
    ;;

  *) usage ;;
esac
