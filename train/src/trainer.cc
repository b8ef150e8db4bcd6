#include "mixccl/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "mixccl/train/schedule_1f1b.h"
#include "mixccl/train/speed_emulation.h"

namespace mixccl::train {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void Require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

RankRole RankRole::SingleProcess(const TrainOptions& o) {
  RankRole r;
  r.range = StageRange::Whole(o.model);
  r.micro_batch = o.global_batch / std::max(o.micro_batches, 1);
  return r;
}

Trainer::Trainer(const TrainOptions& options, const RankRole& role, TokenData data,
                 Collectives* comm)
    : options_(options),
      role_(role),
      data_(std::move(data)),
      comm_(comm),
      stage_(options.model, role.range, role.tp),
      optimizer_(options.zero1 && comm != nullptr
                     ? AdamW(options.adamw, stage_.tensors(), stage_.params().size(),
                             comm->OwnedShards(stage_.params().size()))
                     : AdamW(options.adamw, stage_.tensors(), stage_.params().size())),
      idler_(role.slowdown) {
  if (role.blas_threads > 0) SetBlasThreads(role.blas_threads);
  compute_threads_ = BlasThreads();
  const int G = options.global_batch, M = options.micro_batches;
  Require(G >= 1 && M >= 1 && G % M == 0, "global batch " + std::to_string(G) +
                                              " is not a multiple of the " + std::to_string(M) +
                                              " micro-batches per step");
  Require(role.micro_batch >= 1 && role.slot_offset >= 0 &&
              role.slot_offset + role.micro_batch <= G / M,
          "replica " + std::to_string(role.replica) + " takes sequences [" +
              std::to_string(role.slot_offset) + ", " +
              std::to_string(role.slot_offset + role.micro_batch) + ") of a micro-batch slot of " +
              std::to_string(G / M));
  Require(role.range.embedding == (role.stage == 0) &&
              role.range.head == (role.stage == role.num_stages - 1),
          "the embedding belongs to the first stage and the head to the last");
  Require(comm != nullptr || (role.num_replicas == 1 && role.num_stages == 1 && role.tp.size == 1),
          "a run with several replicas or stages needs a communicator");
  Require(data_.vocab_size() <= options.model.vocab_size,
          data_.origin() + ": vocabulary of " + std::to_string(data_.vocab_size()) +
              " tokens does not fit the model's " + std::to_string(options.model.vocab_size));
  stage_.Init(options.seed);
  if (role.tp.size > 1) {
    // The block's sums run inside Forward/Backward: timed apart so that compute_s stays compute.
    stage_.SetTensorParallelSum([this](float* data, std::size_t n) {
      const auto t = Clock::now();
      const double cpu = ComputeSeconds(compute_threads_);
      comm_->SumOverTensorParallel(data, n);
      tp_comm_s_ += Seconds(t);
      tp_comm_cpu_s_ += ComputeSeconds(compute_threads_) - cpu;
    });
  }
  in_flight_.resize(MaxInFlight(role.stage, role.num_stages, M));
}

void Trainer::ReadMicroBatch(int slot, std::vector<int>& tokens, std::vector<int>& targets) {
  const int T = options_.model.seq_len;
  const int slot_size = options_.global_batch / options_.micro_batches;
  tokens.resize(static_cast<size_t>(role_.micro_batch) * T);
  targets.resize(tokens.size());
  const std::uint64_t first =
      position_.next_sequence + static_cast<std::uint64_t>(slot) * slot_size + role_.slot_offset;
  for (int b = 0; b < role_.micro_batch; ++b) {
    data_.ReadSequence(first + b, T, tokens.data() + b * T, targets.data() + b * T);
  }
}

StepRecord Trainer::Step() {
  const auto step_start = Clock::now();
  const int T = options_.model.seq_len, C = options_.model.channels;
  const int B = role_.micro_batch;
  const size_t activation_count = static_cast<size_t>(B) * T * C;
  const bool first = role_.stage == 0, last = role_.stage == role_.num_stages - 1;
  // Every token of the global batch weighs 1/(G*T) in the objective (the mean loss). Each
  // replica's backward thus already carries its share of the tokens, and the replicas'
  // gradients are summed, not averaged: the update equals the single-process one whatever
  // the micro-batch sizes.
  const float dloss = 1.0f / (static_cast<float>(options_.global_batch) * T);
  StepRecord rec;
  rec.step = static_cast<long long>(position_.step) + 1;
  stage_.ZeroGrads();

  std::vector<int> tokens, targets;
  double loss_sum = 0.0;
  const std::vector<PipelineOp> ops =
      OneFOneBOrder(role_.stage, role_.num_stages, options_.micro_batches);
  // The output of the previous operation travels in the same grouped exchange as the input of
  // the next one (send forward + receive backward, send backward + receive forward): a stage
  // and its neighbour may both be sending to each other at that moment.
  PipelineMessage pending_send;
  bool have_send = false;
  recv_buffer_.resize(activation_count);
  tp_comm_s_ = 0.0;
  tp_comm_cpu_s_ = 0.0;
  for (const PipelineOp& op : ops) {
    MicroBatchState& state = in_flight_[op.micro_batch % in_flight_.size()];
    PipelineMessage recv;
    const bool need_recv = op.forward ? !first : !last;
    if (need_recv) {
      recv = {recv_buffer_.data(), activation_count, role_.stage + (op.forward ? -1 : 1)};
    }
    if (have_send || need_recv) {
      const auto t = Clock::now();
      comm_->PipelineExchange(have_send ? &pending_send : nullptr, need_recv ? &recv : nullptr);
      rec.comm_s += Seconds(t);
    }
    have_send = false;
    const auto t = Clock::now();
    const double cpu_start = ComputeSeconds(compute_threads_);
    const double tp_before = tp_comm_s_, tp_cpu_before = tp_comm_cpu_s_;
    if (op.forward) {
      ReadMicroBatch(op.micro_batch, tokens, targets);
      loss_sum += stage_.Forward(state, B, tokens.data(), targets.data(),
                                 first ? nullptr : recv_buffer_.data());
      if (!last) {
        pending_send = {state.x.back().data(), activation_count, role_.stage + 1};
        have_send = true;
      }
    } else {
      stage_.Backward(state, last ? nullptr : recv_buffer_.data(), dloss);
      if (!first) {
        pending_send = {state.dinput.data(), activation_count, role_.stage - 1};
        have_send = true;
      }
    }
    // The emulated device is slower at computing only: the tensor-parallel sums inside the
    // operation are communication and are not stretched.
    const double computed = Seconds(t) - (tp_comm_s_ - tp_before);
    const double cpu =
        ComputeSeconds(compute_threads_) - cpu_start - (tp_comm_cpu_s_ - tp_cpu_before);
    const double idled = idler_.Idle(cpu, computed);
    rec.emulated_s += idled;
    rec.compute_s += computed + idled;
  }
  rec.comm_s += tp_comm_s_;
  std::vector<float>& grads = stage_.grads();
  double sum_of_squares = 0.0;
  if (comm_ != nullptr) {
    const auto t = Clock::now();
    if (have_send) comm_->PipelineExchange(&pending_send, nullptr);
    const bool zero1 = options_.zero1 && role_.num_replicas > 1;
    if (zero1) {
      comm_->ReduceShardsOverReplicas(grads.data(), grads.size());
    } else if (role_.num_replicas > 1) {
      comm_->SumOverReplicas(grads.data(), grads.size());
    }
    // The loss lives on the last stage of each replica; the other ranks add zeros, and so
    // do the tensor-parallel ranks but the first, which computed the same loss.
    if (role_.tp.index != 0) loss_sum = 0.0;
    comm_->SumOverAll(&loss_sum, 1);
    // The norm is taken after the replicas' sum: every replica then has the same gradient,
    // and summing over one pipeline counts each parameter once.
    sum_of_squares = SumOfSquares(grads.data(), grads.size());
    if (zero1) {
      // Only the owner of a shard has its summed gradient: every rank counts what it owns
      // (its replicated tensors on the first tp rank only), and one sum over the job counts
      // every parameter of the model once.
      sum_of_squares = OwnedSumOfSquares(grads.data());
      comm_->SumOverAll(&sum_of_squares, 1);
    } else if (role_.tp.size > 1) {
      // Replicated tensors hold the same gradient on every tensor-parallel rank: the first
      // counts them, the others only their slices of the split ones.
      sum_of_squares = 0.0;
      for (const ParamTensor& t : stage_.tensors()) {
        if (t.tp_split || role_.tp.index == 0) {
          sum_of_squares += SumOfSquares(grads.data() + t.offset, t.size);
        }
      }
      comm_->SumOverTensorParallel(&sum_of_squares, 1);
    }
    if (role_.num_stages > 1 && !zero1) comm_->SumOverPipeline(&sum_of_squares, 1);
    rec.comm_s += Seconds(t);
  } else {
    sum_of_squares = SumOfSquares(grads.data(), grads.size());
  }

  optimizer_.Step(stage_.params().data(), grads.data(),
                  ClipScale(sum_of_squares, options_.adamw.grad_clip));
  if (comm_ != nullptr && options_.zero1 && role_.num_replicas > 1) {
    const auto t = Clock::now();
    comm_->GatherShardsOverReplicas(stage_.params().data(), stage_.params().size());
    rec.comm_s += Seconds(t);
  }
  position_.step += 1;
  position_.next_sequence += options_.global_batch;

  const double step_tokens = static_cast<double>(options_.global_batch) * T;
  rec.loss = loss_sum / step_tokens;
  rec.grad_norm = std::sqrt(sum_of_squares);
  rec.step_time_s = Seconds(step_start);
  rec.tokens_per_s = step_tokens / rec.step_time_s;
  return rec;
}

double Trainer::OwnedSumOfSquares(const float* grads) const {
  double s = 0.0;
  for (const ParamRange& r : optimizer_.owned()) {
    for (const ParamTensor& t : stage_.tensors()) {
      if (!t.tp_split && role_.tp.index != 0) continue;
      const std::size_t begin = std::max(r.offset, t.offset);
      const std::size_t end = std::min(r.offset + r.count, t.offset + t.size);
      if (begin < end) s += SumOfSquares(grads + begin, end - begin);
    }
  }
  return s;
}

void Trainer::Save(const std::string& path) { SaveCheckpoint(path, stage_, optimizer_, position_); }

void Trainer::Resume(const std::string& path) {
  position_ = LoadCheckpoint(path, stage_, optimizer_);
}

}  // namespace mixccl::train
