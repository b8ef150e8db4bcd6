#include "mixccl/train/mixccl_collectives.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "mixccl/train/comm_failure.h"
#include "mixccl/train/zero_shards.h"

namespace mixccl::train {

namespace {

void Check(mixcclResult_t r, const char* call, mixcclComm_t comm) {
  if (r == mixcclSuccess) return;
  const char* detail = mixcclGetLastError(comm);
  const std::string what = std::string(call) + " failed: " + mixcclGetErrorString(r) +
                           (detail && *detail ? std::string(": ") + detail : std::string());
  // A peer's failure (or a stuck peer) is what --survive recovers from: its own type.
  if (r == mixcclRemoteError || r == mixcclTimeout) throw CommFailure(what);
  throw std::runtime_error(what);
}

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string("--plan runs one rank of a mixccl job, but ") + name +
                             " is not set: start the ranks with mixcclrun");
  }
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0) throw std::runtime_error(std::string(name) + " is not a number");
  return static_cast<int>(x);
}

}  // namespace

void ReadJobEnvironment(int* rank, int* num_ranks) {
  *rank = EnvInt("MIXCCL_RANK");
  *num_ranks = EnvInt("MIXCCL_NRANKS");
  // Without MIXCCL_COMM_ID each rank would make its own id and wait for peers that never come.
  if (std::getenv("MIXCCL_COMM_ID") == nullptr) {
    throw std::runtime_error(
        "--plan needs MIXCCL_COMM_ID (the rendezvous address): start the ranks with mixcclrun");
  }
}

mixcclComm_t JoinJob(int rank, int num_ranks) {
  mixcclUniqueId id;
  Check(mixcclGetUniqueId(&id), "mixcclGetUniqueId", nullptr);
  mixcclComm_t comm = nullptr;
  Check(mixcclCommInitRank(&comm, num_ranks, id, rank), "mixcclCommInitRank", nullptr);
  return comm;
}

MixcclCollectives::MixcclCollectives(mixcclComm_t world, const ExecPlan& plan, const RankRole& role,
                                     const GptStage& stage, bool zero1)
    : world_(world), replica_(role.replica) {
  // With tensor parallelism each tp index forms its own pipelines and gradient intervals: a
  // rank exchanges activations and sums gradient slices with the ranks of its own index.
  const int tp = role.tp.size, tpi = role.tp.index;
  Check(mixcclCommSplit(world_, role.replica * tp + tpi, role.stage, &pipeline_, nullptr),
        "mixcclCommSplit", world_);
  if (tp > 1) {
    // The stage's tp ranks are consecutive in the rank map; the first names the communicator.
    int rank = 0;
    Check(mixcclCommUserRank(world_, &rank), "mixcclCommUserRank", world_);
    Check(mixcclCommSplit(world_, rank - tpi, tpi, &tensor_, nullptr), "mixcclCommSplit", world_);
  }
  // One split per cut interval, in the same order on every rank; a rank joins the intervals
  // its stage holds and passes MIXCCL_SPLIT_NOCOLOR for the others.
  const std::vector<int> cuts = GradientCuts(plan, stage.config().num_layers);
  const std::vector<GradientSegment> mine = SegmentsOfStage(cuts, stage);
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const GradientSegment* seg = nullptr;
    for (const GradientSegment& s : mine) {
      if (s.interval == static_cast<int>(k)) seg = &s;
    }
    mixcclComm_t comm = nullptr;
    Check(mixcclCommSplit(world_, seg ? static_cast<int>(k) * tp + tpi : MIXCCL_SPLIT_NOCOLOR,
                          role.replica,
                          &comm, nullptr),
          "mixcclCommSplit", world_);
    if (seg == nullptr) continue;
    if (role.num_replicas == 1) {
      mixcclCommDestroy(comm);
      comm = nullptr;
    }
    Interval interval{*seg, comm, {}};
    // Every replica is a member of every interval's communicator, keyed by its number: comm
    // rank r is replica r.
    if (zero1 && comm != nullptr) {
      interval.shards = SplitByWeights({seg->offset, seg->count}, ReplicaMicroBatches(plan));
    }
    intervals_.push_back(interval);
  }
}

MixcclCollectives::~MixcclCollectives() {
  for (Interval& i : intervals_) {
    if (i.comm) mixcclCommDestroy(i.comm);
  }
  if (tensor_) mixcclCommDestroy(tensor_);
  if (pipeline_) mixcclCommDestroy(pipeline_);
  if (world_) mixcclCommDestroy(world_);
}

mixcclComm_t MixcclCollectives::ShrinkWorld(const std::vector<int>& lost) {
  // The communicators split from the world are given up rather than shrunk: the survivors'
  // plan groups the ranks anew (other replicas, stages and gradient intervals), so they are
  // split again from the new world. Aborting them first releases nothing of the new one.
  for (Interval& i : intervals_) {
    if (i.comm) mixcclCommAbort(i.comm);
    i.comm = nullptr;
  }
  intervals_.clear();
  if (tensor_) mixcclCommAbort(tensor_);
  if (pipeline_) mixcclCommAbort(pipeline_);
  tensor_ = pipeline_ = nullptr;
  mixcclComm_t survivors = nullptr;
  const mixcclResult_t r = mixcclCommShrink(world_, lost.data(), static_cast<int>(lost.size()),
                                            &survivors, nullptr, MIXCCL_SHRINK_ABORT);
  if (r != mixcclSuccess) {
    const char* detail = mixcclGetLastError(world_);
    throw std::runtime_error(std::string("mixcclCommShrink failed: ") + mixcclGetErrorString(r) +
                             (detail && *detail ? std::string(": ") + detail : std::string()));
  }
  mixcclCommDestroy(world_);
  world_ = nullptr;
  return survivors;
}

void MixcclCollectives::SumOverReplicas(float* data, std::size_t n) {
  for (const Interval& i : intervals_) {
    if (i.comm == nullptr) continue;
    if (i.segment.offset + i.segment.count > n) throw std::logic_error("gradient segment overflow");
    float* p = data + i.segment.offset;
    Check(mixcclAllReduce(p, p, i.segment.count, mixcclFloat32, mixcclSum, i.comm, nullptr),
          "mixcclAllReduce (gradients)", i.comm);
  }
}

std::vector<ParamRange> MixcclCollectives::OwnedShards(std::size_t n) const {
  std::vector<ParamRange> owned;
  for (const Interval& i : intervals_) {
    if (i.segment.offset + i.segment.count > n) throw std::logic_error("gradient segment overflow");
    if (i.shards.empty()) {
      owned.push_back({i.segment.offset, i.segment.count});  // one replica: all of it
    } else if (i.shards[replica_].count > 0) {
      owned.push_back(i.shards[replica_]);
    }
  }
  return owned;
}

void MixcclCollectives::ReduceShardsOverReplicas(float* grads, std::size_t n) {
  for (const Interval& i : intervals_) {
    if (i.shards.empty()) continue;
    if (i.segment.offset + i.segment.count > n) throw std::logic_error("gradient segment overflow");
    for (size_t r = 0; r < i.shards.size(); ++r) {
      if (i.shards[r].count == 0) continue;  // every replica knows the shards: all skip it
      float* p = grads + i.shards[r].offset;
      Check(mixcclReduce(p, p, i.shards[r].count, mixcclFloat32, mixcclSum, static_cast<int>(r),
                         i.comm, nullptr),
            "mixcclReduce (ZeRO-1 gradients)", i.comm);
    }
  }
}

void MixcclCollectives::GatherShardsOverReplicas(float* params, std::size_t n) {
  for (const Interval& i : intervals_) {
    if (i.shards.empty()) continue;
    if (i.segment.offset + i.segment.count > n) throw std::logic_error("gradient segment overflow");
    for (size_t r = 0; r < i.shards.size(); ++r) {
      if (i.shards[r].count == 0) continue;
      float* p = params + i.shards[r].offset;
      Check(mixcclBroadcast(p, p, i.shards[r].count, mixcclFloat32, static_cast<int>(r), i.comm,
                            nullptr),
            "mixcclBroadcast (ZeRO-1 parameters)", i.comm);
    }
  }
}

void MixcclCollectives::SumOverAll(double* data, std::size_t n) {
  Check(mixcclAllReduce(data, data, n, mixcclFloat64, mixcclSum, world_, nullptr),
        "mixcclAllReduce", world_);
}

void MixcclCollectives::SumOverPipeline(double* data, std::size_t n) {
  Check(mixcclAllReduce(data, data, n, mixcclFloat64, mixcclSum, pipeline_, nullptr),
        "mixcclAllReduce (pipeline)", pipeline_);
}

void MixcclCollectives::SumOverTensorParallel(float* data, std::size_t n) {
  Check(mixcclAllReduce(data, data, n, mixcclFloat32, mixcclSum, tensor_, nullptr),
        "mixcclAllReduce (tensor parallel)", tensor_);
}

void MixcclCollectives::SumOverTensorParallel(double* data, std::size_t n) {
  Check(mixcclAllReduce(data, data, n, mixcclFloat64, mixcclSum, tensor_, nullptr),
        "mixcclAllReduce (tensor parallel)", tensor_);
}

void MixcclCollectives::PipelineExchange(const PipelineMessage* send, PipelineMessage* recv) {
  // Stage j of a pipeline is rank j of its pipeline communicator (split keyed by stage).
  Check(mixcclGroupStart(), "mixcclGroupStart", pipeline_);
  if (send != nullptr) {
    Check(mixcclSend(send->data, send->count, mixcclFloat32, send->peer_stage, pipeline_, nullptr),
          "mixcclSend", pipeline_);
  }
  if (recv != nullptr) {
    Check(mixcclRecv(recv->data, recv->count, mixcclFloat32, recv->peer_stage, pipeline_, nullptr),
          "mixcclRecv", pipeline_);
  }
  Check(mixcclGroupEnd(), "mixcclGroupEnd", pipeline_);
}

}  // namespace mixccl::train
