// Profiling mode of mixccl-train: measures one transformer block's forward and backward time,
// and the embedding's and the head's, at several micro-batch sizes, for every device type of a
// cluster spec (each with its emulated duty cycle; the emulated slowdown of speed_emulation.h
// applied to the measured time), and
// writes them as mixccl-plan's --profile JSON. Also the planner's model spec of the trainer's
// GPT, so that the planner plans this very model from measured numbers.
#pragma once

#include <string>
#include <vector>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/gpt_model.h"

namespace mixccl::train {

struct ProfilerOptions {
  std::vector<int> micro_batches = {1, 2, 4, 8};
  int repeats = 8;  // timed runs per size after one warm-up; their mean is kept
};

// One measurement on this machine, seconds (before the emulated slowdown is applied).
struct MeasuredPart {
  int micro_batch = 0;
  double block_forward_s = 0.0, block_backward_s = 0.0;
  double embedding_forward_s = 0.0, embedding_backward_s = 0.0;
  double head_forward_s = 0.0, head_backward_s = 0.0;  // final layernorm, head, loss
  double block_activation_bytes = 0.0;                 // what one block keeps per micro-batch
};

// A rank's per-step work outside its forward and backward passes: zeroing the gradients, their
// sum of squares (the clipping norm) and the AdamW update, for `parameters` parameters.
struct MeasuredUpdate {
  double parameters = 0.0;
  double seconds = 0.0;
};

// Times that work on the whole model (mean wall time of `repeats` steps after one warm-up).
// The trainer's speed emulation stretches forward and backward operations only, so the
// update runs at the machine's speed on every emulated type: the profile gives every type
// this time, not multiplied by a slowdown.
MeasuredUpdate MeasureUpdate(const GptConfig& model, int repeats);

// Measures, for each of `slowdowns` (one per device type), with the duty cycle of a device
// that many times slower than the CPU (each timed operation followed by its emulated idle, as
// the trainer runs such a device). The types take turns repeat by repeat (the machine's drift
// then hits them alike); the result has one list of sizes per type. threads[t] > 0: type t
// computes with that many BLAS threads (its cluster spec's cpu_threads), timed in wall time;
// missing or 0: the process's own thread count, restored at the end.
std::vector<std::vector<MeasuredPart>> MeasureParts(const GptConfig& model,
                                                    const ProfilerOptions& options,
                                                    const std::vector<double>& slowdowns,
                                                    const std::vector<int>& threads = {});

// Replaces each part's times by the affine fit time = a + b x micro_batch over the measured
// sizes (least squares on the per-sequence time b + a / micro_batch). The model's compute is
// affine in the micro-batch (a fixed part, and every sequence costing the same); the sizes are
// measured one after another on a machine whose speed drifts, and each point's own noise (on
// the shared build machine +-10-20% between neighbouring sizes) would otherwise make the
// planner choose micro-batch sizes by which of them happened to be timed at a quiet moment.
// Fewer than two sizes: unchanged. A fit with a negative fixed part a, or not positive at
// every size, keeps the mean per-sequence time instead (a = 0).
void FitOverMicroBatches(std::vector<MeasuredPart>* parts);

// The planner's name for the trainer's model: "mixccl-gpt-L3-C32-H4-T32-V256".
std::string PlannerModelName(const GptConfig& model);

// The --profile JSON: per device type of `cluster` (parts_per_type[i] measured for type i),
// the measured times times its slowdown (times `slowdown_base`, as mixccl-train
// --slowdown-base emulates it), and with `update` (parameters > 0) one "update" entry per type
// carrying it unscaled (MeasureUpdate).
std::string ProfileJson(const GptConfig& model, const ClusterSpec& cluster,
                        const std::vector<std::vector<MeasuredPart>>& parts_per_type,
                        double slowdown_base = 1.0, const MeasuredUpdate& update = {});

// The planner's model spec of the trainer's GPT (fp32, plain GELU MLP of 4C, no flash
// attention, untied head) with `global_batch` sequences per step.
std::string PlannerModelSpecJson(const GptConfig& model, int global_batch);

}  // namespace mixccl::train
