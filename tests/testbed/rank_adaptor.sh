#!/usr/bin/env bash
# Runs one rank of a heterogeneous testbed job on the adaptor the job lists for it:
#   rank_adaptor.sh ADAPTORS PROGRAM [ARGS...]
# ADAPTORS is a comma list with one adaptor per global rank (e.g. host,host,gloo,gloo); entry
# MIXCCL_RANK (set by host_ranks.sh) becomes MIXCCL_ADAPTOR. A gloo rank also gets
# MIXCCL_GLOO_IFNAME = this testbed host's interface (from MIXCCL_SOCKET_IFNAME, "=mxveth<i>"),
# unless it is set already: the host names tbhost<i> resolve nowhere. Then execs PROGRAM.
#   testbed.sh exec 2 -- host_ranks.sh 2 rank_adaptor.sh host,host,gloo,gloo multihost_check
set -u
list=${1:?usage: rank_adaptor.sh ADAPTORS PROGRAM [ARGS...]}
shift
[ $# -gt 0 ] || { echo "usage: rank_adaptor.sh ADAPTORS PROGRAM [ARGS...]" >&2; exit 2; }
rank=${MIXCCL_RANK:?rank_adaptor.sh: MIXCCL_RANK unset (start it from host_ranks.sh)}
IFS=, read -r -a adaptors <<<"$list"
if [ -n "${MIXCCL_NRANKS:-}" ] && [ "${#adaptors[@]}" != "$MIXCCL_NRANKS" ]; then
  echo "rank_adaptor.sh: '$list' lists ${#adaptors[@]} adaptors for $MIXCCL_NRANKS ranks" >&2
  exit 2
fi
adaptor=${adaptors[$rank]:-}
[ -n "$adaptor" ] || { echo "rank_adaptor.sh: no adaptor for rank $rank in '$list'" >&2; exit 2; }
export MIXCCL_ADAPTOR=$adaptor
if [ "$adaptor" = gloo ] && [ -z "${MIXCCL_GLOO_IFNAME:-}" ] && [ -n "${MIXCCL_SOCKET_IFNAME:-}" ]; then
  ifname=${MIXCCL_SOCKET_IFNAME#=}
  export MIXCCL_GLOO_IFNAME=${ifname#^}
fi
exec "$@"
