// What the trainer needs from the communication library. An interface, so that the
// single-process trainer and the model tests need no communicator; mixccl_collectives.cc
// implements it over include/mixccl.h alone.
#pragma once

#include <cstddef>
#include <vector>

#include "mixccl/train/adamw.h"

namespace mixccl::train {

// One message to or from a pipeline neighbour.
struct PipelineMessage {
  float* data = nullptr;
  std::size_t count = 0;
  int peer_stage = -1;  // stage index in this rank's pipeline
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  // In-place sum of this stage's gradients over the replicas (data parallel).
  virtual void SumOverReplicas(float* data, std::size_t n) = 0;
  // In-place sum over every rank of the job (losses, token counts).
  virtual void SumOverAll(double* data, std::size_t n) = 0;
  // In-place sum over the stages of this rank's pipeline (the squared gradient norm).
  virtual void SumOverPipeline(double* data, std::size_t n) = 0;
  // In-place sums over the tensor-parallel ranks of this rank's stage: the block's partial
  // products (float) and the gradient norm's split part (double).
  virtual void SumOverTensorParallel(float* data, std::size_t n) = 0;
  virtual void SumOverTensorParallel(double* data, std::size_t n) = 0;
  // ZeRO-1 (when the implementation was set up for it): the ranges of this rank's flat
  // parameter array whose optimizer step it runs (zero_shards.h), the uneven reduce-scatter
  // that sums each shard of the gradients onto its owner, and the uneven all-gather that
  // brings every owner's updated shard to the other replicas.
  virtual std::vector<ParamRange> OwnedShards(std::size_t n) const = 0;
  virtual void ReduceShardsOverReplicas(float* grads, std::size_t n) = 0;
  virtual void GatherShardsOverReplicas(float* params, std::size_t n) = 0;
  // One grouped exchange with pipeline neighbours: the send and the receive (either may be
  // null) proceed together, so two neighbours that send to each other at the same moment do
  // not wait for each other forever.
  virtual void PipelineExchange(const PipelineMessage* send, PipelineMessage* recv) = 0;
};

}  // namespace mixccl::train
