// Memory one device needs for its pipeline stage: weights, gradients, optimizer states and the
// activations kept for the backward pass under the 1F1B schedule.
#pragma once

#include "mixccl/train/model_spec.h"

namespace mixccl::train {

struct StageMemoryQuery {
  int num_layers = 0;
  int recomputed_layers = 0;  // layers that keep only their input and redo the forward pass
  bool has_embedding = false;
  bool has_head = false;  // final norm, output projection and loss
  int tp = 1;
  int micro_batch = 1;
  int in_flight = 1;         // micro-batches whose activations are alive at the peak (1F1B)
  int optimizer_shards = 1;  // ZeRO-1 sharding degree; ignored without ZeRO-1
};

struct MemoryBreakdown {
  double weights_bytes = 0.0;
  double gradient_bytes = 0.0;
  double optimizer_bytes = 0.0;
  double activation_bytes = 0.0;
  double reserved_bytes = 0.0;
  double total_bytes() const {
    return weights_bytes + gradient_bytes + optimizer_bytes + activation_bytes + reserved_bytes;
  }
};

class MemoryModel {
 public:
  explicit MemoryModel(const ModelSpec& model) : model_(model) {}

  // Parameters held by one device of the stage.
  double StageParams(const StageMemoryQuery& q) const;
  // Bytes of optimizer state per parameter: fp32 master copy (when the weights are not fp32)
  // plus Adam's two fp32 moments.
  int OptimizerBytesPerParam() const;

  // Activations one layer keeps for its backward pass, for one micro-batch, per device.
  double LayerActivationBytes(int tp, int micro_batch) const;
  // What a recomputed layer keeps: its input only.
  double RecomputedLayerActivationBytes(int micro_batch) const;
  // Activations of the final norm, output projection and loss for one micro-batch.
  double HeadActivationBytes(int tp, int micro_batch) const;

  MemoryBreakdown Stage(const StageMemoryQuery& q, double reserved_bytes) const;

  // Smallest number of recomputed layers (0..q.num_layers) for which the stage fits in
  // `capacity_bytes`, or -1 when it does not fit even with every layer recomputed. This is the
  // greedy rule: recompute one more layer until the stage fits.
  int MinRecomputedLayers(StageMemoryQuery q, double reserved_bytes, double capacity_bytes) const;

 private:
  const ModelSpec& model_;
};

}  // namespace mixccl::train
