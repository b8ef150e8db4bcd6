// The training loop of one rank: its part of the model, its share of every batch, the 1F1B
// order of its micro-batches, the gradient sums with the other ranks and the AdamW update.
// A single-process run is the rank that holds the whole model and the whole batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mixccl/train/adamw.h"
#include "mixccl/train/checkpoint.h"
#include "mixccl/train/collectives.h"
#include "mixccl/train/gpt_model.h"
#include "mixccl/train/speed_emulation.h"
#include "mixccl/train/token_data.h"

namespace mixccl::train {

struct TrainOptions {
  GptConfig model;
  AdamWConfig adamw;
  int global_batch = 8;   // G: sequences per optimizer step
  int micro_batches = 1;  // M: micro-batch slots per step (the pipeline's m)
  std::uint64_t seed = 1;
  bool zero1 = false;  // shard the optimizer over the replicas (zero_shards.h)
};

// What one rank does in the run. Every replica takes `micro_batch` sequences of each of the
// M slots, at `slot_offset` within the slot; the replicas' micro-batches of a slot add up to
// G / M, so the global batch does not depend on the plan.
struct RankRole {
  int replica = 0;
  int num_replicas = 1;
  int stage = 0;  // position in the replica's pipeline
  int num_stages = 1;
  StageRange range;         // layers, embedding, head, recomputation
  int micro_batch = 0;      // sequences per micro-batch of this replica
  int slot_offset = 0;      // sequences of the replicas before this one in each slot
  TensorSplit tp;           // this rank's part of its stage's tensor parallelism
  std::string device_type;  // the plan's (or --device-type); empty: not emulated
  double slowdown = 1.0;    // emulated compute slowdown of the device type (speed_emulation.h)
  int blas_threads = 0;     // the device type's cpu_threads (0: the environment's)

  static RankRole SingleProcess(const TrainOptions& o);
};

// One rank's times in one step (the per-stage times of the log and the report).
struct RankStepTimes {
  double compute_s = 0.0;
  double comm_s = 0.0;
  double idle_s = 0.0;  // the rest of the step: optimizer, data reading
};

struct StepRecord {
  long long step = 0;  // 1-based
  double loss = 0.0;   // mean over the global batch's tokens
  double grad_norm = 0.0;
  double step_time_s = 0.0;
  double compute_s = 0.0;   // forward and backward
  double comm_s = 0.0;      // pipeline exchanges and gradient sums (waiting included)
  double emulated_s = 0.0;  // part of compute_s idled to emulate a slower device
  double tokens_per_s = 0.0;
  std::vector<RankStepTimes> ranks;  // every rank's times, filled on rank 0 by RunTraining
};

class Trainer {
 public:
  // `comm` may be null for a single process (one replica, one stage). Throws
  // std::invalid_argument for an inconsistent role.
  Trainer(const TrainOptions& options, const RankRole& role, TokenData data, Collectives* comm);

  StepRecord Step();

  void Save(const std::string& path);
  void Resume(const std::string& path);

  const TrainPosition& position() const { return position_; }
  // Where the run goes on (a recovery that took the state from another rank sets it).
  void set_position(const TrainPosition& p) { position_ = p; }
  GptStage& stage() { return stage_; }
  AdamW& optimizer() { return optimizer_; }
  const RankRole& role() const { return role_; }
  const TrainOptions& options() const { return options_; }
  const TokenData& data() const { return data_; }
  // Reads this replica's sequences of micro-batch slot `slot` of the next step (Step reads
  // them so; --debug-state records them).
  void ReadMicroBatch(int slot, std::vector<int>& tokens, std::vector<int>& targets);
  // The emulation's shortfall so far (SlowdownIdler::behind_s).
  double emulation_behind_s() const { return idler_.behind_s(); }
  int compute_threads() const { return compute_threads_; }

 private:
  // ZeRO-1: the squared norm of the gradient parts this rank owns (its shards; replicated
  // tensor-parallel tensors on the first tp rank only).
  double OwnedSumOfSquares(const float* grads) const;
  TrainOptions options_;
  RankRole role_;
  TokenData data_;
  Collectives* comm_;
  GptStage stage_;
  AdamW optimizer_;
  TrainPosition position_;
  std::vector<MicroBatchState> in_flight_;
  std::vector<float> recv_buffer_;
  double tp_comm_s_ = 0.0;      // time in tensor-parallel sums, which run inside the compute
  double tp_comm_cpu_s_ = 0.0;  // and their CPU time
  SlowdownIdler idler_;         // the emulated device speed (speed_emulation.h)
  int compute_threads_ = 1;     // OpenBLAS's threads: how an operation's cost is timed
};

}  // namespace mixccl::train
