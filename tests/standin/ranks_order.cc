#include "ranks_order.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <vector>

#include "rank_harness.h"

namespace ranks_test {
namespace {

// A host function that holds its stream until the test opens it.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  static void hold(void* arg) {
    auto* g = static_cast<Gate*>(arg);
    std::unique_lock<std::mutex> lock(g->m);
    g->cv.wait(lock, [&] { return g->open; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
};

float input(int rank, size_t i) { return static_cast<float>((rank + i) % 3); }

// Two AlltoAlls in place, the first on a held stream, the second on another stream: on the
// native path both borrow one scratch buffer, so the second must wait for the first on the
// device (else its input would be overwritten by the first's). Host ranks take part with the
// NULL stream. Returns the failures.
long twoStreamsInPlace(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  const size_t count = 1000, bytes = count * nranks * sizeof(int32_t);
  auto value = [](int from, int to, size_t i, int call) {
    return static_cast<int32_t>(from * 100000 + to * 1000 + static_cast<int>(i % 100) * 10 + call);
  };
  std::vector<int32_t> in[2], want[2], got(count * nranks);
  void* buf[2];
  for (int call = 0; call < 2; ++call) {
    in[call].resize(count * nranks);
    want[call].resize(count * nranks);
    for (int p = 0; p < nranks; ++p)
      for (size_t i = 0; i < count; ++i) {
        in[call][p * count + i] = value(rank, p, i, call);
        want[call][p * count + i] = value(p, rank, i, call);
      }
    buf[call] = b.alloc(bytes);
    b.write(buf[call], in[call].data(), bytes);
  }
  long failures = 0;
  mixcclResult_t r[2];
  if (!b.device()) {
    for (int call = 0; call < 2; ++call)
      r[call] = mixcclAlltoAll(buf[call], buf[call], count, mixcclInt32, comm, nullptr);
  } else {
    const mixcclAdaptor_v2_t* t = b.adaptor();
    Gate gate;
    void* second = nullptr;
    b.check(t->streamCreate(&second), "streamCreate");
    b.check(t->launchHostFunc(b.stream(), Gate::hold, &gate), "launchHostFunc");
    r[0] = mixcclAlltoAll(buf[0], buf[0], count, mixcclInt32, comm, b.stream());
    r[1] = mixcclAlltoAll(buf[1], buf[1], count, mixcclInt32, comm, second);
    usleep(100 * 1000);  // the second stream's work, if it did not wait, has run by now
    gate.release();
    b.check(t->streamSynchronize(second), "streamSynchronize (second stream)");
    b.check(t->streamDestroy(second), "streamDestroy");
  }
  for (int call = 0; call < 2; ++call) {
    b.read(got.data(), buf[call], bytes);
    if (r[call] != mixcclSuccess || got != want[call]) {
      std::fprintf(stderr, "rank %d: in-place AlltoAll %d of 2 (two streams): %s\n", rank, call + 1,
                   r[call] != mixcclSuccess ? mixcclGetLastError(comm) : "wrong result");
      ++failures;
    }
    b.release(buf[call]);
  }
  return failures;
}

}  // namespace

long runStreamOrder(mixcclComm_t comm, RankBuffers& b, int rank, int nranks) {
  long failures = 0;
  const size_t count = 1 << 16, bytes = count * sizeof(float);
  std::vector<float> in(count), want(count, 0.0f), got(count);
  for (size_t i = 0; i < count; ++i) {
    in[i] = input(rank, i);
    for (int p = 0; p < nranks; ++p) want[i] += input(p, i);
  }
  void* buf = b.alloc(bytes);
  b.write(buf, in.data(), bytes);
  if (!b.device()) {
    mixcclResult_t r = mixcclAllReduce(buf, buf, count, mixcclFloat32, mixcclSum, comm, nullptr);
    b.read(got.data(), buf, bytes);
    if (r != mixcclSuccess || got != want) {
      std::fprintf(stderr, "rank %d: AllReduce beside held device streams: %s\n", rank,
                   r != mixcclSuccess ? mixcclGetLastError(comm) : "wrong result");
      ++failures;
    }
    b.release(buf);
    return failures + twoStreamsInPlace(comm, b, rank, nranks);
  }
  const mixcclAdaptor_v2_t* t = b.adaptor();
  Gate gate;
  void* event = nullptr;
  void* side = nullptr;
  b.check(t->eventCreate(&event), "eventCreate");
  b.check(t->streamCreate(&side), "streamCreate");
  b.check(t->launchHostFunc(b.stream(), Gate::hold, &gate), "launchHostFunc");
  const double t0 = harnessNow();
  mixcclResult_t r = mixcclAllReduce(buf, buf, count, mixcclFloat32, mixcclSum, comm, b.stream());
  const double took = harnessNow() - t0;
  b.check(t->eventRecord(event, b.stream()), "eventRecord");
  if (r != mixcclSuccess || took > 1.0) {
    std::fprintf(stderr, "rank %d: AllReduce on a held stream: %s after %.3f s (it must only enqueue)\n", rank,
                 r == mixcclSuccess ? "returned" : mixcclGetLastError(comm), took);
    ++failures;
  }
  // Give work that wrongly ignored the held stream time to run, then look.
  usleep(200 * 1000);
  int done = -1;
  b.check(t->eventQuery(event, &done), "eventQuery");
  b.check(t->memcpyAsync(got.data(), buf, bytes, mixcclCopyDeviceToHost, side), "memcpyAsync on a second stream");
  b.check(t->streamSynchronize(side), "streamSynchronize (second stream)");
  if (done != 0 || got != in) {
    std::fprintf(stderr, "rank %d: work behind the held stream ran early (event done %d, buffer %s)\n", rank, done,
                 got == in ? "untouched" : "changed");
    ++failures;
  }
  std::printf("rank %d: AllReduce returned in %.3f ms with its stream held; nothing ran before the hold ended\n",
              rank, took * 1e3);
  gate.release();
  b.read(got.data(), buf, bytes);
  b.check(t->eventQuery(event, &done), "eventQuery");
  if (got != want || done != 1) {
    std::fprintf(stderr, "rank %d: after the hold: result %s, event done %d\n", rank, got == want ? "right" : "wrong", done);
    ++failures;
  }
  b.check(t->eventDestroy(event), "eventDestroy");
  b.check(t->streamDestroy(side), "streamDestroy");
  b.release(buf);
  return failures + twoStreamsInPlace(comm, b, rank, nranks);
}

}  // namespace ranks_test
