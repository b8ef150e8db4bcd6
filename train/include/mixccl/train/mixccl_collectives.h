// The trainer's communication over the mixccl C API (include/mixccl.h only): one communicator
// for the whole job, one per pipeline (its stages, for the gradient norm and the activations),
// one per stage's tensor-parallel ranks and one per gradient interval (the ranks that hold those
// layers, one per replica), all made with mixcclCommSplit.
#pragma once

#include <vector>

#include "mixccl.h"
#include "mixccl/train/collectives.h"
#include "mixccl/train/exec_plan.h"

namespace mixccl::train {

// This rank and the job's size from MIXCCL_RANK / MIXCCL_NRANKS, and a check that the
// rendezvous address MIXCCL_COMM_ID is set, as mixcclrun sets them. Throws std::runtime_error
// saying what is missing. Reads the environment only.
void ReadJobEnvironment(int* rank, int* num_ranks);

// Joins the job's communicator (every rank gets the same unique id from MIXCCL_COMM_ID).
mixcclComm_t JoinJob(int rank, int num_ranks);

class MixcclCollectives : public Collectives {
 public:
  // Takes ownership of `world`. Every rank of the job must construct it (the splits are
  // collective). Throws std::runtime_error with mixccl's message.
  // `zero1`: shard the optimizer over the replicas (zero_shards.h).
  MixcclCollectives(mixcclComm_t world, const ExecPlan& plan, const RankRole& role,
                    const GptStage& stage, bool zero1 = false);
  ~MixcclCollectives() override;
  MixcclCollectives(const MixcclCollectives&) = delete;
  MixcclCollectives& operator=(const MixcclCollectives&) = delete;

  // --survive: a new world of the survivors, made with mixcclCommShrink(MIXCCL_SHRINK_ABORT)
  // without the `lost` ranks (world numbering, ascending; every survivor passes the same list).
  // Every communicator of this object is given up; it can then only be destroyed. Throws
  // std::runtime_error with mixccl's message.
  mixcclComm_t ShrinkWorld(const std::vector<int>& lost);

  void SumOverReplicas(float* data, std::size_t n) override;
  void SumOverAll(double* data, std::size_t n) override;
  void SumOverPipeline(double* data, std::size_t n) override;
  void SumOverTensorParallel(float* data, std::size_t n) override;
  void SumOverTensorParallel(double* data, std::size_t n) override;
  void PipelineExchange(const PipelineMessage* send, PipelineMessage* recv) override;
  std::vector<ParamRange> OwnedShards(std::size_t n) const override;
  void ReduceShardsOverReplicas(float* grads, std::size_t n) override;
  void GatherShardsOverReplicas(float* params, std::size_t n) override;

 private:
  struct Interval {
    GradientSegment segment;
    mixcclComm_t comm = nullptr;     // null when the interval has one replica
    std::vector<ParamRange> shards;  // ZeRO-1: replica r's (= comm rank r's) part
  };
  mixcclComm_t world_ = nullptr;
  mixcclComm_t pipeline_ = nullptr;
  mixcclComm_t tensor_ = nullptr;  // the stage's tensor-parallel ranks; null for tp 1
  std::vector<Interval> intervals_;
  int replica_ = 0;
};

}  // namespace mixccl::train
