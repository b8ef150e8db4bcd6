// The TCP roof for perf/compare: how fast the bytes of a bandwidth-optimal collective can cross
// loopback TCP on this machine when nothing else is done with them.
//
//   mixcclrun -np 4 tcp_roof_perf -C allreduce -S /tmp/store-dir -b 1M -e 64M -f 2
//
// Every rank streams to the next rank in a ring exactly the bytes a ring (or recursive halving)
// collective of that size sends per rank, 2(n-1)/n * S for AllReduce and (n-1)/n * S for
// AllGather and ReduceScatter, while receiving as many from the previous rank: one duplex
// stream per rank, no reduction, no step waiting for another, socket buffers like mixccl's
// same-host connections (-B) and their congestion control (-K, Reno; 'default' keeps the
// system's), and user buffers that stay in cache (the stream cycles over at
// most kWindowBytes of each side). busbw is then the per-rank send rate, the quantity
// nccl-tests' busbw measures, paying only what the kernel's TCP costs per byte: a collective
// over the same sockets, which must also touch its whole buffers in memory and reduce,
// should not report more. The out-of-place and in-place columns are two runs of the same
// transfer.
//
// Ranks come from mixccl_launch's detection (mixcclrun, mpirun, srun, torchrun); the
// rendezvous is a fresh directory -S shared by the ranks, where each rank publishes its port.
// -c 1 checks one transfer per size: every received byte must be the previous rank's pattern.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "peer_launch.h"
#include "peer_table.h"
#include "roof_sweep.h"

namespace {

// mixccl's defaults on same-host connections (src/transport/same_host_tuning.cc).
constexpr int kDefaultSocketBufferBytes = 4 << 20;
constexpr const char* kDefaultCongestion = "reno";
constexpr size_t kMaxCallBytes = 1 << 20;  // bytes per send or recv call, as mixccl's chunks
constexpr size_t kWindowBytes = 1 << 20;   // user memory each side cycles over (in L2)

[[noreturn]] void die(int rank, const char* what) {
  std::fprintf(stderr, "tcp_roof_perf: rank %d: %s: %s\n", rank, what, std::strerror(errno));
  std::exit(1);
}

uint8_t patternByte(int rank, size_t i) { return static_cast<uint8_t>(rank * 31 + i % 251); }

class Ring {
 public:
  Ring(int rank, int nranks, const std::string& dir, int bufferBytes, const std::string& cc)
      : rank_(rank), nranks_(nranks) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) die(rank, "socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(listener, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      die(rank, "listen on 127.0.0.1");
    }
    publishPort(dir, ntohs(a.sin_port));
    next_ = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons(readPort(dir, (rank + 1) % nranks));
    if (next_ < 0 || connect(next_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      die(rank, "connect to the next rank");
    }
    prev_ = accept(listener, nullptr, nullptr);
    if (prev_ < 0) die(rank, "accept from the previous rank");
    close(listener);
    int one = 1;
    for (int fd : {next_, prev_}) {
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof(bufferBytes));
      if (cc != "default" &&
          setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.data(), (socklen_t)cc.size()) != 0) {
        die(rank, ("congestion control " + cc).c_str());
      }
    }
  }
  ~Ring() {
    close(next_);
    close(prev_);
  }

  // Sends `bytes` from src (cycling over srcBytes) to the next rank while receiving as many
  // from the previous rank into dst (cycling over dstBytes).
  void stream(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstBytes, size_t bytes) {
    size_t sent = 0, got = 0;
    while (sent < bytes || got < bytes) {
      pollfd p[2] = {{next_, static_cast<short>(sent < bytes ? POLLOUT : 0), 0},
                     {prev_, static_cast<short>(got < bytes ? POLLIN : 0), 0}};
      if (poll(p, 2, 60000) <= 0) die(rank_, "no progress for 60 s");
      if (p[0].revents & POLLOUT) {
        size_t off = sent % srcBytes;
        size_t len = std::min({kMaxCallBytes, bytes - sent, srcBytes - off});
        ssize_t k = send(next_, src + off, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0 && errno != EAGAIN) die(rank_, "send");
        if (k > 0) sent += static_cast<size_t>(k);
      }
      if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        size_t off = got % dstBytes;
        size_t len = std::min({kMaxCallBytes, bytes - got, dstBytes - off});
        ssize_t k = recv(prev_, dst + off, len, MSG_DONTWAIT);
        if (k == 0) die(rank_, "the previous rank closed its connection");
        if (k < 0 && errno != EAGAIN) die(rank_, "recv");
        if (k > 0) got += static_cast<size_t>(k);
      }
    }
  }

  // Sum of v over the ranks, known to every rank: a token goes around the ring twice (add,
  // then distribute). Doubles as a barrier.
  double sum(double v) {
    double acc = v;
    if (rank_ != 0) {
      recvAll(&acc, sizeof(acc));
      acc += v;
    }
    sendAll(&acc, sizeof(acc));
    if (rank_ == 0) recvAll(&acc, sizeof(acc));
    if (rank_ != 0) recvAll(&acc, sizeof(acc));
    if (rank_ != nranks_ - 1) sendAll(&acc, sizeof(acc));
    return acc;
  }

 private:
  void publishPort(const std::string& dir, int port) {
    std::string tmp = dir + "/.port." + std::to_string(rank_), fin = dir + "/port." +
                                                                    std::to_string(rank_);
    std::ofstream(tmp) << port << "\n";
    if (std::rename(tmp.c_str(), fin.c_str()) != 0) die(rank_, "publish the port in -S DIR");
  }
  int readPort(const std::string& dir, int peer) {
    std::string path = dir + "/port." + std::to_string(peer);
    for (double end = roofNow() + 60; roofNow() < end;) {
      std::ifstream f(path);
      int port = 0;
      if (f >> port) return port;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    errno = ETIMEDOUT;
    die(rank_, ("waiting for " + path).c_str());
  }
  void sendAll(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n) {
      ssize_t k = send(next_, c, n, MSG_NOSIGNAL);
      if (k <= 0) die(rank_, "send");
      c += k;
      n -= static_cast<size_t>(k);
    }
  }
  void recvAll(void* p, size_t n) {
    char* c = static_cast<char*>(p);
    while (n) {
      ssize_t k = recv(prev_, c, n, 0);
      if (k <= 0) die(rank_, "recv");
      c += k;
      n -= static_cast<size_t>(k);
    }
  }

  int rank_, nranks_;
  int next_ = -1, prev_ = -1;
};

// Bytes one rank sends in a bandwidth-optimal collective of these buffers (float32 elements).
size_t bytesPerRank(peer_coll c, size_t param, int n) {
  size_t whole = (c == PEER_ALLREDUCE ? param : param * static_cast<size_t>(n)) * sizeof(float);
  size_t factor = c == PEER_ALLREDUCE ? 2 : 1;
  return factor * whole / static_cast<size_t>(n) * static_cast<size_t>(n - 1);
}

}  // namespace

int main(int argc, char** argv) {
  int bufferBytes = kDefaultSocketBufferBytes;
  std::string congestion = kDefaultCongestion;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {  // -B, -K are ours; the rest are the peers' common flags
    if (std::strcmp(argv[i], "-K") == 0 && i + 1 < argc) {
      congestion = argv[++i];
    } else if (std::strcmp(argv[i], "-B") == 0 && i + 1 < argc) {
      bufferBytes = std::atoi(argv[++i]);
      if (bufferBytes <= 0) {
        std::fprintf(stderr, "tcp_roof_perf: bad -B %s\n", argv[i]);
        return 2;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  peer_args a;
  if (peer_parse_args(static_cast<int>(rest.size()), rest.data(), &a,
                      " -S store_dir [-B socket_buffer_bytes] [-K congestion_control]") != 0) {
    return 2;
  }
  const char* storeDir = nullptr;
  mixcclLaunchInfo info;
  if (peer_launch("tcp_roof_perf", a, &storeDir, &info, 2) != 0) return 2;
  const int n = info.nranks, rank = info.rank;
  Ring ring(rank, n, storeDir, bufferBytes, congestion);

  const size_t maxBytes = peer_max_elems(&a, n) * sizeof(float);
  std::vector<uint8_t> src(maxBytes + 64), dst(maxBytes + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = patternByte(rank, i);
  if (rank == 0) {
    char banner[256];
    std::snprintf(banner, sizeof(banner),
                  "tcp-roof-perf %s: raw loopback TCP ring, the bytes a bandwidth-optimal "
                  "collective sends per rank, SO_SNDBUF/SO_RCVBUF %d, congestion control %s",
                  peer_coll_name(a.coll), bufferBytes, congestion.c_str());
    peer_print_header(banner, &a, n);
  }
  const int prev = (rank + n - 1) % n;
  int errors = roofSweep(a, n, rank, 1, [&](const RoofSize& z, int) {
    const size_t bytes = bytesPerRank(a.coll, z.param, n);
    const size_t srcBytes = std::clamp<size_t>(z.sendElems * sizeof(float), 1, kWindowBytes);
    const size_t dstBytes = std::clamp<size_t>(z.recvElems * sizeof(float), 1, kWindowBytes);
    RoofRun r;
    r.seconds = roofTime(ring, a, n, [&] {
      ring.stream(src.data(), srcBytes, dst.data(), dstBytes, bytes);
    });
    if (a.check && bytes > 0) {
      std::fill(dst.begin(), dst.end(), 0);
      ring.stream(src.data(), srcBytes, dst.data(), dstBytes, bytes);
      long long bad = 0;
      for (size_t i = 0; i < std::min(bytes, dstBytes); ++i) {
        // The stream cycles over srcBytes on the sender and dstBytes here; the last lap
        // written to dst position i carried stream offset o with o % dstBytes == i.
        size_t o = i + (bytes - 1 - i) / dstBytes * dstBytes;
        bad += dst[i] != patternByte(prev, o % srcBytes);
      }
      r.wrong = static_cast<int64_t>(ring.sum(static_cast<double>(bad)));
    }
    return r;
  });
  ring.sum(0);
  return errors ? 1 : 0;
}
