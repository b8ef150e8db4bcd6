// The UCX sendrecv roof for perf/compare: sendrecv_perf's traffic (each rank sends to rank+1
// and receives from rank-1, both at once) written straight on UCP, with nothing else around it.
//
//   mixcclrun -np 2 ucx_roof_perf -C sendrecv -S /tmp/store-dir -b 1M -e 64M -f 4
//       [-E peer|none] [-T tcp_segment_bytes] [-P spin_us]
//
// ucx_perftest's tag_bw streams one direction between two processes; a 2-rank sendrecv moves
// both directions through the same two processes, so on a machine with few CPUs the one-way
// number is not what UCX can give this pattern. This program is: per iteration every rank posts
// one tagged receive of the whole buffer from the previous rank and one tagged send of the whole
// buffer to the next (as mixccl's UCX transport does for a send/recv pair), then progresses its
// worker until both complete. The context, worker and endpoints are set up as mixccl's
// (UCP_FEATURE_TAG, serialized worker, endpoints from worker addresses) and the endpoints'
// error handling mode is mixccl's by default (-E peer; -E none shows what that mode costs).
// UCX_TLS and the other UCX_* variables apply as UCX reads them; -T sets the tcp transport's
// send and receive segments as mixccl does (from MIXCCL_CHUNK_BYTES; its INFO line "tcp
// segments"), -T best times every size with UCX's default and 64 KiB, 256 KiB and 1 MiB
// segments and reports the fastest (the roof over that knob); without -T, UCX's defaults.
// A waiting rank polls its worker until -P microseconds (100, MIXCCL_SPIN_US's default) pass
// without progress, then arms it and sleeps on its event fd (UCX's wakeup protocol, as mixccl
// waits with a CPU per rank): on a machine with few CPUs a rank that only polls takes the CPU
// the kernel's TCP needs (-P -1 polls only).
//
// Ranks come from mixccl_launch's detection (mixcclrun, mpirun, srun, torchrun); the worker
// addresses meet in a fresh directory -S shared by the ranks. -c 1 checks one transfer per size:
// every received byte must be the previous rank's pattern.
#include <poll.h>
#include <ucp/api/ucp.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "peer_launch.h"
#include "peer_table.h"
#include "roof_sweep.h"

namespace {

constexpr ucp_tag_t kDataTag = 1;
constexpr ucp_tag_t kSumTag = 2;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

[[noreturn]] void die(int rank, const std::string& what) {
  std::fprintf(stderr, "ucx_roof_perf: rank %d: %s\n", rank, what.c_str());
  std::exit(1);
}

uint8_t patternByte(int rank, size_t i) { return static_cast<uint8_t>(rank * 31 + i % 251); }

class UcpRing {
 public:
  // label: several rings meet in one directory, each under its own file names.
  UcpRing(int rank, int nranks, const std::string& dir, const std::string& label,
          bool peerErrorMode, const std::string& tcpSegmentBytes, double spinSeconds)
      : rank_(rank), nranks_(nranks), label_(label), peerErrorMode_(peerErrorMode),
        spinSeconds_(spinSeconds) {
    ucp_config_t* config = nullptr;
    check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
    if (!tcpSegmentBytes.empty()) {  // tcp's own field names (see src/transport/ucx/ucx_worker.cc)
      check(ucp_config_modify(config, "TX_SEG_SIZE", tcpSegmentBytes.c_str()), "TX_SEG_SIZE");
      check(ucp_config_modify(config, "RX_SEG_SIZE", tcpSegmentBytes.c_str()), "RX_SEG_SIZE");
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    ucs_status_t st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    check(st, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    check(ucp_worker_create(context_, &wp, &worker_), "ucp_worker_create");
    check(ucp_worker_get_efd(worker_, &eventFd_), "ucp_worker_get_efd");
    ucp_address_t* address = nullptr;
    size_t length = 0;
    check(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
    publish(dir, std::string(reinterpret_cast<const char*>(address), length));
    ucp_worker_release_address(worker_, address);

    std::string next = readAddress(dir, (rank + 1) % nranks);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.address = reinterpret_cast<const ucp_address_t*>(next.data());
    ep.err_mode = peerErrorMode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    check(ucp_ep_create(worker_, &ep, &next_), "ucp_ep_create to the next rank");
  }
  ~UcpRing() {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = peerErrorMode_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;  // force needs error mode peer
    wait(ucp_ep_close_nbx(next_, &p), "ucp_ep_close_nbx");
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
  }

  // Sends `bytes` of src to the next rank while receiving as many from the previous into dst.
  void sendrecv(const void* src, void* dst, size_t bytes, ucp_tag_t tag = kDataTag) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(1);
    void* recv = ucp_tag_recv_nbx(worker_, dst, bytes, tag, kFullMask, &p);
    void* send = ucp_tag_send_nbx(next_, src, bytes, tag, &p);
    wait(recv, "the receive from the previous rank");
    wait(send, "the send to the next rank");
  }

  // Sum of v over the ranks, known to every rank: a token goes around the ring twice (add,
  // then distribute). Doubles as a barrier.
  double sum(double v) {
    double acc = v;
    if (rank_ != 0) {
      recvOnly(&acc);
      acc += v;
    }
    sendOnly(&acc);
    if (rank_ == 0) recvOnly(&acc);
    if (rank_ != 0) recvOnly(&acc);
    if (rank_ != nranks_ - 1) sendOnly(&acc);
    return acc;
  }

 private:
  void check(ucs_status_t st, const char* what) {
    if (st != UCS_OK) die(rank_, std::string(what) + ": " + ucs_status_string(st));
  }
  // Progresses the worker until the request (or immediate status) completes, for at most 60 s:
  // polls while the worker makes progress or for spinSeconds_ after it last did, then sleeps on
  // the event fd once ucp_worker_arm says nothing is pending.
  void wait(ucs_status_ptr_t r, const char* what) {
    if (r == nullptr) return;
    if (UCS_PTR_IS_ERR(r)) check(UCS_PTR_STATUS(r), what);
    const double end = roofNow() + 60;
    double idleSince = roofNow();
    ucs_status_t st;
    unsigned rounds = 0;
    while ((st = ucp_request_check_status(r)) == UCS_INPROGRESS) {
      if (ucp_worker_progress(worker_) != 0) {
        idleSince = 0;
        continue;
      }
      if (++rounds % 64 != 0 || spinSeconds_ < 0) {
        if (rounds % 4096 == 0 && roofNow() > end)
          die(rank_, std::string(what) + ": no progress for 60 s");
        continue;
      }
      double t = roofNow();
      if (t > end) die(rank_, std::string(what) + ": no progress for 60 s");
      if (idleSince == 0) idleSince = t;
      if (t - idleSince < spinSeconds_) continue;
      ucs_status_t armed = ucp_worker_arm(worker_);
      if (armed == UCS_ERR_BUSY) continue;  // events came meanwhile: progress them first
      check(armed, "ucp_worker_arm");
      pollfd p{eventFd_, POLLIN, 0};
      if (poll(&p, 1, 1000) < 0 && errno != EINTR)
        die(rank_, std::string("poll: ") + strerror(errno));
    }
    ucp_request_free(r);
    check(st, what);
  }
  void sendOnly(const double* v) {
    ucp_request_param_t p{};
    wait(ucp_tag_send_nbx(next_, v, sizeof(*v), kSumTag, &p), "the sum's send");
  }
  void recvOnly(double* v) {
    ucp_request_param_t p{};
    wait(ucp_tag_recv_nbx(worker_, v, sizeof(*v), kSumTag, kFullMask, &p), "the sum's receive");
  }
  void publish(const std::string& dir, const std::string& address) {
    std::string tmp = dir + "/.ucx-address-" + label_ + "." + std::to_string(rank_);
    std::string fin = dir + "/ucx-address-" + label_ + "." + std::to_string(rank_);
    std::ofstream(tmp, std::ios::binary) << address;
    if (std::rename(tmp.c_str(), fin.c_str()) != 0) die(rank_, "cannot publish in -S " + dir);
  }
  std::string readAddress(const std::string& dir, int peer) {
    std::string path = dir + "/ucx-address-" + label_ + "." + std::to_string(peer);
    for (double end = roofNow() + 60; roofNow() < end;) {
      std::ifstream f(path, std::ios::binary);
      std::string a((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (!a.empty()) return a;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    die(rank_, "no worker address in " + path + " after 60 s");
  }

  int rank_, nranks_;
  std::string label_;
  bool peerErrorMode_;
  double spinSeconds_;  // < 0: poll only
  int eventFd_ = -1;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h next_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  bool peerErrorMode = true;
  std::string tcpSegmentBytes;
  double spinUs = 100;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {  // -E, -T, -P are ours; the rest are the peers' common flags
    if (std::strcmp(argv[i], "-P") == 0 && i + 1 < argc) {
      char* end = nullptr;
      spinUs = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0') {
        std::fprintf(stderr, "ucx_roof_perf: bad -P %s\n", argv[i]);
        return 2;
      }
    } else if (std::strcmp(argv[i], "-T") == 0 && i + 1 < argc) {
      tcpSegmentBytes = argv[++i];
      if (tcpSegmentBytes != "best" && std::strtoull(tcpSegmentBytes.c_str(), nullptr, 10) == 0) {
        std::fprintf(stderr, "ucx_roof_perf: bad -T %s\n", tcpSegmentBytes.c_str());
        return 2;
      }
    } else if (std::strcmp(argv[i], "-E") == 0 && i + 1 < argc) {
      std::string m = argv[++i];
      if (m != "peer" && m != "none") {
        std::fprintf(stderr, "ucx_roof_perf: -E takes peer or none, got '%s'\n", m.c_str());
        return 2;
      }
      peerErrorMode = m == "peer";
    } else {
      rest.push_back(argv[i]);
    }
  }
  peer_args a;
  const char* usage = " -S store_dir [-E peer|none] [-T tcp_segment_bytes|best] [-P spin_us]";
  if (peer_parse_args(static_cast<int>(rest.size()), rest.data(), &a, usage) != 0) return 2;
  if (a.coll != PEER_SENDRECV) {
    std::fprintf(stderr, "ucx_roof_perf: only -C sendrecv (the roof of sendrecv over UCX)\n");
    return 2;
  }
  const char* storeDir = nullptr;
  mixcclLaunchInfo info;
  if (peer_launch("ucx_roof_perf", a, &storeDir, &info, 2) != 0) return 2;
  const int n = info.nranks, rank = info.rank;
  // -T best: one ring per segment size, every size timed on each, the fastest reported.
  const std::vector<std::string> segmentChoices =
      tcpSegmentBytes == "best" ? std::vector<std::string>{"", "65536", "262144", "1048576"}
                                : std::vector<std::string>{tcpSegmentBytes};
  std::vector<std::unique_ptr<UcpRing>> rings;
  const double spinSeconds = spinUs < 0 ? -1.0 : spinUs * 1e-6;
  for (size_t c = 0; c < segmentChoices.size(); ++c)
    rings.push_back(std::make_unique<UcpRing>(rank, n, storeDir, std::to_string(c), peerErrorMode,
                                              segmentChoices[c], spinSeconds));

  const size_t maxBytes = peer_max_elems(&a, n) * sizeof(float);
  std::vector<uint8_t> src(maxBytes + 64), dst(maxBytes + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = patternByte(rank, i);
  if (rank == 0) {
    char banner[384];
    std::snprintf(banner, sizeof(banner),
                  "ucx-roof-perf %s: raw UCP tagged send and receive of the whole buffer per "
                  "iteration, endpoints in error mode %s, tcp segments %s, %s",
                  peer_coll_name(a.coll), peerErrorMode ? "peer" : "none",
                  tcpSegmentBytes.empty()       ? "UCX's default"
                  : tcpSegmentBytes == "best"   ? "the fastest of UCX's default, 64K, 256K, 1M"
                                                : tcpSegmentBytes.c_str(),
                  spinUs < 0 ? "polling only" : ("polling " + std::to_string((int)spinUs) +
                                                 " us, then sleeping on the worker's fd").c_str());
    peer_print_header(banner, &a, n);
  }
  const int prev = (rank + n - 1) % n;
  int errors = roofSweep(a, n, rank, static_cast<int>(rings.size()),
                         [&](const RoofSize& z, int variant) {
    UcpRing& ring = *rings[variant];
    const size_t bytes = z.sendElems * sizeof(float);
    RoofRun r;
    r.seconds = roofTime(ring, a, n, [&] { ring.sendrecv(src.data(), dst.data(), bytes); });
    if (a.check && bytes > 0) {
      std::fill(dst.begin(), dst.end(), 0);
      ring.sendrecv(src.data(), dst.data(), bytes);
      long long bad = 0;
      for (size_t i = 0; i < bytes; ++i) bad += dst[i] != patternByte(prev, i);
      r.wrong = static_cast<int64_t>(ring.sum(static_cast<double>(bad)));
    }
    return r;
  });
  rings.front()->sum(0);
  return errors ? 1 : 0;
}
