// Device memory on a stream (see staged_executor.h): the collective is enqueued on the caller's
// stream around a job that the executor thread runs on host memory (or, where every pair moves
// device memory, on the device buffers themselves).
#include "core/staged_dispatch.h"

#include <memory>
#include <vector>

#include "adaptors/adaptor_loader.h"
#include "algo/reduce.h"
#include "base/env.h"
#include "base/error.h"
#include "core/collective_dispatch.h"
#include "core/staged_executor.h"

namespace mixccl {
namespace {

// A stream step that failed fails the communicator (its peers are already inside the
// collective). Logged once: by Health::fail, or here when the communicator had failed before.
Result failStep(Comm* comm, const AdaptorTable& t, const char* step, mixcclResult_t r) {
  const std::string why = nativeFailureText(t, step);
  if (!comm->health.fail(r, why)) raiseError(r, "%s", why.c_str());
  return r;
}

}  // namespace

void ensureExecutor(Comm* comm) {
  std::lock_guard<std::mutex> lock(comm->stagedMutex);
  if (!comm->staged)
    comm->staged.reset(new StagedExecutor([comm](Result r, const std::string& why) {
      comm->health.fail(r, "device staging: " + why);
    }));
}

Result takeJobStaging(Comm* comm, StagedJob* job, size_t sendBytes, size_t recvBytes) {
  const AdaptorTable& t = *comm->adaptor->table;
  StagedExecutor& staging = *comm->staged;
  if (sendBytes)
    MIXCCL_CHECK(checkNative(t, "hostAlloc",
                             staging.takeStaging(t, sendBytes, &job->hostSend, &job->hostSendBytes)));
  if (recvBytes)
    MIXCCL_CHECK(checkNative(t, "hostAlloc",
                             staging.takeStaging(t, recvBytes, &job->hostRecv, &job->hostRecvBytes)));
  return checkNative(t, "eventCreate", t.eventCreate(&job->event));
}

Result enqueueStagedJob(Comm* comm, void* s, std::shared_ptr<StagedJob> job,
                        const std::vector<StreamCopy>& before, const std::vector<StreamCopy>& after) {
  const AdaptorTable& t = *comm->adaptor->table;
  // From here the executor owns the job (and frees its staging once the stream is past it).
  comm->staged->submit(job);
  mixcclResult_t r = mixcclSuccess;
  const char* step = "memcpy before the job";
  for (const StreamCopy& c : before)
    if (r == mixcclSuccess && c.bytes) r = t.memcpyAsync(c.dst, c.src, c.bytes, c.kind, s);
  if (r == mixcclSuccess) {
    step = "launchHostFunc";
    r = t.launchHostFunc(s, &StagedExecutor::markReady, job.get());
  }
  if (r != mixcclSuccess) {
    // Nothing of the job is on the stream: it must never run (its peers see this rank fail).
    std::lock_guard<std::mutex> lock(job->m);
    job->cancelled = job->ready = job->done = true;
    job->cv.notify_all();
    return failStep(comm, t, step, r);
  }
  r = t.launchHostFunc(s, &StagedExecutor::holdUntilDone, job.get());
  step = "launchHostFunc";
  for (const StreamCopy& c : after) {
    if (r != mixcclSuccess || !c.bytes) continue;
    step = "memcpy after the job";
    r = t.memcpyAsync(c.dst, c.src, c.bytes, c.kind, s);
  }
  if (r == mixcclSuccess) {
    step = "eventRecord";
    r = t.eventRecord(job->event, s);
  }
  if (r != mixcclSuccess) return failStep(comm, t, step, r);
  return mixcclSuccess;
}

namespace {

// Device memory straight to the transport (device_direct.h) suits the collectives that only
// move bytes and that every domain runs with the same flat algorithm (runAcrossDomains hands
// them to runFlat), so ranks that stage and ranks that do not still match message for message.
// They run in place, so the algorithm copies nothing on the host: this rank's own block is
// copied device to device on the stream first (*own). Reductions need arithmetic on the
// device, which mixccl's algorithms cannot do: they stage. False: stage.
bool directInPlace(const Comm* comm, const CollCall& call, CollCall* direct, StreamCopy* own) {
  const size_t block = call.count * dataTypeSize(call.type);
  const int r = comm->rank;
  *direct = call;
  own->kind = mixcclCopyDeviceToDevice;
  switch (call.kind) {
    case CollKind::AllGather:
      direct->sendbuf = static_cast<char*>(call.recvbuf) + (size_t)r * block;
      *own = StreamCopy{const_cast<void*>(direct->sendbuf), call.sendbuf, block, own->kind};
      break;
    case CollKind::Gather:
      if (r != call.root) return true;
      direct->sendbuf = static_cast<char*>(call.recvbuf) + (size_t)r * block;
      *own = StreamCopy{const_cast<void*>(direct->sendbuf), call.sendbuf, block, own->kind};
      break;
    case CollKind::Scatter:
      if (r != call.root) return true;
      direct->recvbuf = const_cast<char*>(static_cast<const char*>(call.sendbuf)) + (size_t)r * block;
      *own = StreamCopy{call.recvbuf, direct->recvbuf, block, own->kind};
      break;
    default:
      return false;
  }
  // Already in place: nothing to copy.
  if (own->dst == own->src) own->bytes = 0;
  return true;
}

// Device memory in a mixed job (see staged_executor.h): enqueue copy-out, hand-over, hold,
// copy-in on the caller's stream and return; the executor thread runs the host-memory
// algorithm (in-domain steps on mixccl's transport) when the stream reaches the job. Where
// every pair of this rank moves device memory (device_direct.h) and the collective allows it,
// the job runs on the device buffers instead, without the two staging copies.
}  // namespace

Result runStaged(Comm* comm, const CollCall& call, const PreMulSumOp* preMul) {
  const AdaptorTable& t = *comm->adaptor->table;
  ensureExecutor(comm);
  auto job = std::make_shared<StagedJob>();
  job->table = &t;
  job->holdSeconds = comm->config.timeoutS;
  CollCall direct;
  StreamCopy own;
  if (comm->deviceDirect.all && directInPlace(comm, call, &direct, &own)) {
    MIXCCL_CHECK(checkNative(t, "eventCreate", t.eventCreate(&job->event)));
    direct.stream = nullptr;
    const uint64_t stamp = callStampOf(call);
    job->run = [comm, direct, stamp]() {
      Transfers tr(*comm->proxy, Deadline::afterSeconds(comm->config.timeoutS));
      tr.setMemory(MemoryKind::Device);
      tr.setStamp(stamp);
      CollContext ctx{comm->rank, comm->nranks, tr, comm->tuning.chunkBytes,
                      comm->tuning.rhThresholdBytes};
      Result r = runFlat(ctx, direct);
      Result w = tr.waitAll();
      return r != mixcclSuccess ? r : w;
    };
    return enqueueStagedJob(comm, call.stream, job, {own}, {});
  }
  size_t sendBytes = 0, recvBytes = 0;
  callBytes(call, comm->rank, comm->nranks, &sendBytes, &recvBytes);
  StagedExecutor& staging = *comm->staged;
  MIXCCL_CHECK(takeJobStaging(comm, job.get(), sendBytes, recvBytes));
  CollCall host = call;
  host.sendbuf = job->hostSend;
  host.recvbuf = job->hostRecv;
  host.stream = nullptr;
  // A pre-multiplied sum scales the staged input on the host. A device-resident scalar is
  // copied on the stream ahead of the job, so it is read when the stream reaches the call.
  PreMulSumOp scaling;
  if (preMul) {
    scaling = *preMul;
    if (preMul->residence == mixcclScalarDevice) {
      const size_t bytes = dataTypeSize(call.type);
      MIXCCL_CHECK(checkNative(t, "hostAlloc", staging.takeStaging(t, bytes, &job->hostScalar,
                                                                   &job->hostScalarBytes)));
      MIXCCL_CHECK(checkNative(t, "memcpy of the scalar",
                               t.memcpyAsync(job->hostScalar, preMul->location, bytes,
                                             mixcclCopyDeviceToHost, call.stream)));
      scaling.location = job->hostScalar;
    }
  }
  const bool scale = preMul != nullptr && sendBytes != 0;
  const uint64_t stamp = callStampOf(call);
  job->run = [comm, host, scale, scaling, sendBytes, stamp]() {
    if (scale) {
      const void* factor =
          scaling.residence == mixcclScalarDevice ? scaling.location : scaling.value;
      scaleBy(const_cast<void*>(host.sendbuf), host.sendbuf, sendBytes / dataTypeSize(host.type),
              host.type, factor);
    }
    Transfers tr(*comm->proxy, Deadline::afterSeconds(comm->config.timeoutS));
    tr.setStamp(stamp);
    CollContext ctx{comm->rank, comm->nranks, tr, comm->tuning.chunkBytes,
                      comm->tuning.rhThresholdBytes};
    // One domain stages only for a pre-multiplied sum (its library cannot scale): mixccl's
    // transport, connected between every pair, runs the collective on the staged copies.
    Result r = comm->domainMap.single() ? runFlat(ctx, host)
                                        : runAcrossDomains(comm, ctx, host, /*useNative=*/false);
    Result w = tr.waitAll();
    return r != mixcclSuccess ? r : w;
  };
  return enqueueStagedJob(comm, call.stream, job,
                          {StreamCopy{job->hostSend, call.sendbuf, sendBytes, mixcclCopyDeviceToHost}},
                          {StreamCopy{call.recvbuf, job->hostRecv, recvBytes, mixcclCopyHostToDevice}});
}

}  // namespace mixccl
