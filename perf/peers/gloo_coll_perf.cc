// Gloo peer benchmark for perf/compare: float32 (sum) AllReduce, AllGather and ReduceScatter over
// Gloo's TCP transport, timed like the mixccl perf tools and printed in the same table.
//
//   mixcclrun -np 2 gloo_coll_perf -C allreduce -S /tmp/store-dir -b 1M -e 64M -f 2
//
// Ranks come from mixccl_launch's detection (mixcclrun, mpirun, srun, torchrun variables); the
// rendezvous is Gloo's FileStore in the directory -S (fresh and shared by all ranks); connections
// go over 127.0.0.1 (GLOO_HOSTNAME overrides).
// -A selects the AllReduce implementation: "ring" (default; gloo::allreduce with the ring
// algorithm, what PyTorch's ProcessGroupGloo calls), "bcube" (gloo::allreduce), "ring_chunked"
// (AllreduceRingChunked) or "halving_doubling" (AllreduceHalvingDoubling). ReduceScatter is Gloo's
// ReduceScatterHalvingDoubling (in place on its input: out-of-place copies the input first, and
// that copy is timed); AllGather is gloo::allgather.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "peer_launch.h"
#include "peer_table.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::shared_ptr<gloo::Context> g_ctx;
uint32_t g_tag = 0;

void sumFn(void* c, const void* a, const void* b, size_t n) { gloo::sum<float>(c, a, b, n); }

// One collective of one size, with whatever setup Gloo needs kept across iterations.
class Op {
 public:
  Op(peer_coll coll, const std::string& algo, float* send, float* recv, size_t param, bool inPlace)
      : coll_(coll), algo_(algo), send_(send), recv_(recv), param_(param), inPlace_(inPlace) {
    const int n = g_ctx->size;
    if (param_ == 0) return;
    if (coll_ == PEER_ALLREDUCE && algo_ == "ring_chunked") {
      chunked_.reset(new gloo::AllreduceRingChunked<float>(g_ctx, {recv_}, static_cast<int>(param_)));
    } else if (coll_ == PEER_ALLREDUCE && algo_ == "halving_doubling") {
      hd_.reset(new gloo::AllreduceHalvingDoubling<float>(g_ctx, {recv_}, static_cast<int>(param_)));
    } else if (coll_ == PEER_REDUCESCATTER) {
      std::vector<int> recvElems(n, static_cast<int>(param_));
      rs_.reset(new gloo::ReduceScatterHalvingDoubling<float>(
          g_ctx, {recv_}, static_cast<int>(param_ * n), recvElems));
    }
  }

  void run() {
    if (param_ == 0) return;
    const int n = g_ctx->size;
    switch (coll_) {
      case PEER_ALLREDUCE:
        if (chunked_ || hd_) {
          if (!inPlace_) std::memcpy(recv_, send_, param_ * sizeof(float));
          if (chunked_) chunked_->run();
          if (hd_) hd_->run();
        } else {
          gloo::AllreduceOptions opts(g_ctx);
          if (!inPlace_) opts.setInput(send_, param_);
          opts.setOutput(recv_, param_);
          opts.setAlgorithm(algo_ == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                             : gloo::AllreduceOptions::Algorithm::RING);
          opts.setReduceFunction(sumFn);
          opts.setTag(g_tag++);
          gloo::allreduce(opts);
        }
        break;
      case PEER_ALLGATHER: {
        gloo::AllgatherOptions opts(g_ctx);
        if (!inPlace_) opts.setInput(send_, param_);
        opts.setOutput(recv_, param_ * n);
        opts.setTag(g_tag++);
        gloo::allgather(opts);
        break;
      }
      case PEER_REDUCESCATTER:
        if (!inPlace_) std::memcpy(recv_, send_, param_ * n * sizeof(float));
        rs_->run();
        break;
      case PEER_SENDRECV:  // refused in main
        break;
    }
  }

 private:
  peer_coll coll_;
  std::string algo_;
  float* send_;
  float* recv_;
  size_t param_;
  bool inPlace_;
  std::unique_ptr<gloo::AllreduceRingChunked<float>> chunked_;
  std::unique_ptr<gloo::AllreduceHalvingDoubling<float>> hd_;
  std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs_;
};

void barrier() {
  gloo::BarrierOptions opts(g_ctx);
  opts.setTag(g_tag++);
  gloo::barrier(opts);
}

template <typename T>
T sumAll(T v) {
  static T buf[1];
  buf[0] = v;
  gloo::AllreduceOptions opts(g_ctx);
  opts.setOutput(buf, 1);
  opts.setReduceFunction([](void* c, const void* a, const void* b, size_t k) {
    gloo::sum<T>(c, a, b, k);
  });
  opts.setTag(g_tag++);
  gloo::allreduce(opts);
  return buf[0];
}

// Output positions hold the result where the collective writes it (see mpi_coll_perf.c).
long long checkOnce(peer_coll c, const std::string& algo, bool inPlace, float* send, float* recv,
                    size_t param, size_t nsend, size_t nrecv) {
  const int rank = g_ctx->rank, n = g_ctx->size;
  const size_t total = std::max(nsend, nrecv);
  for (size_t i = 0; i < total; ++i) recv[i] = -1.0f;
  if (c == PEER_ALLGATHER) {
    float* dst = inPlace ? recv + static_cast<size_t>(rank) * param : send;
    for (size_t i = 0; i < param; ++i) dst[i] = peer_value(rank, static_cast<size_t>(rank) * param + i);
  } else {
    float* in = inPlace ? recv : send;
    for (size_t i = 0; i < nsend; ++i) in[i] = peer_value(rank, i);
  }
  Op op(c, algo, send, recv, param, inPlace);
  op.run();
  long long wrong = 0;
  const size_t nOut = c == PEER_ALLGATHER ? param * n : param;
  for (size_t i = 0; i < nOut; ++i) {
    float want = c == PEER_ALLGATHER ? peer_value(static_cast<int>(i / param), i)
                 : c == PEER_ALLREDUCE ? peer_sum(n, i)
                                       : peer_sum(n, static_cast<size_t>(rank) * param + i);
    if (recv[i] != want) ++wrong;
  }
  return sumAll<long long>(wrong);
}

}  // namespace

int main(int argc, char** argv) {
  peer_args a;
  if (peer_parse_args(argc, argv, &a,
                      " -S store_dir [-A ring|bcube|ring_chunked|halving_doubling]") != 0) {
    return 2;
  }
  if (a.coll == PEER_SENDRECV) {
    std::fprintf(stderr, "gloo_coll_perf: -C sendrecv is not measured for Gloo (perf/compare "
                         "runs it for mixccl, Open MPI and ucx_perftest only)\n");
    return 2;
  }
  const std::string algo = a.algo ? a.algo : "ring";
  if (algo != "ring" && algo != "bcube" && algo != "ring_chunked" && algo != "halving_doubling") {
    std::fprintf(stderr, "gloo_coll_perf: unknown -A %s\n", algo.c_str());
    return 2;
  }
  const char* storeDir = nullptr;
  mixcclLaunchInfo info;
  if (peer_launch("gloo_coll_perf", a, &storeDir, &info) != 0) return 2;
  try {
    gloo::transport::tcp::attr attr;
    const char* host = std::getenv("GLOO_HOSTNAME");
    attr.hostname = host ? host : "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(storeDir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(info.rank, info.nranks);
    ctx->setTimeout(std::chrono::seconds(120));
    ctx->connectFullMesh(store, dev);
    g_ctx = ctx;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_coll_perf: rank %d: rendezvous failed: %s\n", info.rank, e.what());
    return 1;
  }
  const int n = g_ctx->size, rank = g_ctx->rank;

  const size_t maxElems = peer_max_elems(&a, n);
  std::vector<float> send(maxElems + 16, 0.0f), recv(maxElems + 16, 0.0f);
  if (rank == 0) {
    char banner[256];
    std::snprintf(banner, sizeof(banner),
                  "gloo-coll-perf %s: Gloo %d.%d.%d, TCP transport on %s, allreduce algorithm %s",
                  peer_coll_name(a.coll), GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR,
                  GLOO_VERSION_PATCH, std::getenv("GLOO_HOSTNAME") ? std::getenv("GLOO_HOSTNAME")
                                                                   : "127.0.0.1",
                  algo.c_str());
    peer_print_header(banner, &a, n);
  }
  int errors = 0;
  double bwSum = 0;
  int bwCount = 0;
  int done = 0;
  try {
    for (size_t s = a.min_bytes; !done; s = peer_next_size(&a, s, &done)) {
      size_t param, ns, nr;
      peer_counts(a.coll, s, n, &param, &ns, &nr);
      double us[2], alg[2], bus[2];
      int64_t wrong[2] = {0, 0};
      std::fill(send.begin(), send.end(), 0.0f);
      std::fill(recv.begin(), recv.end(), 0.0f);
      for (int ip = 0; ip < 2; ++ip) {
        Op op(a.coll, algo, send.data(), recv.data(), param, ip == 1);
        for (int w = 0; w < a.warmup; ++w) op.run();
        barrier();
        double t0 = now();
        for (int it = 0; it < a.iters; ++it) op.run();
        double sec = (now() - t0) / a.iters;
        double avg = sumAll<double>(sec) / n;
        us[ip] = avg * 1e6;
        peer_bw(a.coll, param, n, avg, &alg[ip], &bus[ip]);
        if (a.check && param > 0) {
          wrong[ip] = checkOnce(a.coll, algo, ip == 1, send.data(), recv.data(), param, ns, nr);
        }
        if (wrong[ip]) ++errors;
        bwSum += bus[ip];
        ++bwCount;
      }
      if (rank == 0) peer_print_row(a.coll, param, ns, nr, us, alg, bus, wrong);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_coll_perf: rank %d: %s\n", rank, e.what());
    return 1;
  }
  if (rank == 0) peer_print_footer(errors, bwCount ? bwSum / bwCount : 0);
  barrier();
  g_ctx.reset();
  return errors ? 1 : 0;
}
