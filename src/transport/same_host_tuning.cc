#include "transport/same_host_tuning.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/env.h"
#include "base/log.h"

namespace mixccl {
namespace {

// Buffers (MIXCCL_SOCKET_BUFFER_BYTES, derived: 4 MiB on the measured VM, algo/tuning.h; the kernel doubles it and caps it at
// net.core.wmem_max / rmem_max): loopback moves a whole chunk per system call from the first
// message on, instead of waiting for autotuning to grow a 16 KiB send buffer and a 128 KiB
// receive window. Returns false when the kernel refused.
bool setBuffers(int fd, int bytes) {
  return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) == 0 &&
         setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) == 0;
}

// Congestion control (MIXCCL_SOCKET_CONGESTION, reno): nothing on a same-host path can be
// congested, but a pacing algorithm still holds segments back for its timers. With BBR, a
// common system default, 4-rank collectives of 2-16 MiB ran 1.3-1.9x slower
// (docs/performance.md). Reno never paces and is always permitted to unprivileged processes.
bool setCongestion(int fd, const std::string& name) {
  return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), (socklen_t)name.size()) == 0;
}

}  // namespace

void tuneSameHostConnections(int rank, const std::vector<PeerInfo>& peers, int bufferBytes,
                             std::vector<std::vector<Socket>>* conns) {
  std::string congestion = env().socketCongestion;
  if (congestion == "default") congestion.clear();
  int sndbuf = -1, rcvbuf = -1;  // what the kernel granted (first connection), for the log
  char granted[32] = "";
  bool warnedBuffers = false, warnedCongestion = false;
  for (size_t r = 0; r < conns->size(); ++r) {
    if ((int)r == rank || peers[r].hostHash != peers[rank].hostHash) continue;
    for (Socket& c : (*conns)[r]) {
      if (bufferBytes > 0 && !setBuffers(c.fd(), bufferBytes) && !warnedBuffers) {
        WARN(kLogInit | kLogNet, "rank %d: SO_SNDBUF/SO_RCVBUF %d refused for a same-host "
             "connection (%s); keeping the kernel's autotuning", rank, bufferBytes,
             strerror(errno));
        warnedBuffers = true;
      }
      if (!congestion.empty() && !setCongestion(c.fd(), congestion) && !warnedCongestion) {
        WARN(kLogInit | kLogNet, "rank %d: socket option for a same-host connection refused "
             "(%s); keeping the kernel's default. MIXCCL_SOCKET_CONGESTION=%s must be in "
             "net.ipv4.tcp_available_congestion_control (and, without CAP_NET_ADMIN, in "
             "tcp_allowed_congestion_control); 'default' keeps the system's",
             rank, strerror(errno), congestion.c_str());
        warnedCongestion = true;
      }
      if (sndbuf >= 0) continue;
      socklen_t len = sizeof(sndbuf);
      getsockopt(c.fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, &len);
      len = sizeof(rcvbuf);
      getsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len);
      len = sizeof(granted) - 1;
      getsockopt(c.fd(), IPPROTO_TCP, TCP_CONGESTION, granted, &len);
    }
  }
  if (sndbuf < 0) {
    INFO(kLogInit | kLogNet, "rank %d: no peer on this host; sockets keep the kernel's defaults",
         rank);
  } else if (bufferBytes > 0) {
    INFO(kLogInit | kLogNet, "rank %d: same-host socket buffers SO_SNDBUF %d SO_RCVBUF %d "
         "(asked=%d, the tuning line says why), congestion control %s", rank, sndbuf, rcvbuf,
         bufferBytes, granted);
  } else {
    INFO(kLogInit | kLogNet, "rank %d: socket buffers left to kernel autotuning "
         "(MIXCCL_SOCKET_BUFFER_BYTES=0), congestion control %s", rank, granted);
  }
}

}  // namespace mixccl
