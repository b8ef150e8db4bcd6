// Time of the pieces a training step is made of: one transformer layer, the embedding and the
// output head, and the three kinds of communication (tensor-parallel AllReduce, pipeline
// send/recv, data-parallel gradient AllReduce). All times are in seconds for one micro-batch of
// `micro_batch` sequences unless stated otherwise.
#pragma once

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/profile.h"

namespace mixccl::train {

struct PassTimes {
  double forward_s = 0.0;
  double backward_s = 0.0;  // gradient computation only; recomputation is counted separately
};

class CostModel {
 public:
  // `profile` may be null; it must outlive the CostModel.
  CostModel(const ModelSpec& model, const ClusterSpec& cluster, const LayerProfile* profile);

  const ModelSpec& model() const { return model_; }
  const ClusterSpec& cluster() const { return cluster_; }

  // One transformer layer on device type `type` split over `tp` devices: the profile when it
  // has (type, tp), otherwise FLOPs / achievable FLOP/s plus two tensor-parallel AllReduces in
  // the forward pass and two in the backward pass. Recomputing a layer costs one more forward.
  PassTimes Layer(int type, int tp, int micro_batch) const;
  // Vocabulary-parallel embedding lookup: no FLOPs to speak of, one AllReduce when tp > 1.
  PassTimes Embedding(int type, int tp, int micro_batch) const;
  // Final norm, output projection and loss: 2*s*h*V FLOPs forward, twice that backward, and the
  // AllReduce of the input gradient when tp > 1.
  PassTimes Head(int type, int tp, int micro_batch) const;
  // The fixed cost of one forward and one backward pass of a stage, whatever its layers: the
  // profile's "pass" part where measured, else 0 (FLOPs have no fixed part). Every stage pays
  // it once per micro-batch; it is what a stage of one layer pays beyond its layer's time.
  PassTimes StagePass(int type, int tp, int micro_batch) const;

  // A rank's per-step work outside its passes (zeroing the gradients, their norm, the optimizer
  // update) for the `parameters` it updates: the profile's "update" time per parameter on
  // `type`; 0 without one (the analytic model has no memory bandwidth to price it with).
  double Update(int type, double parameters) const;

  // Ring AllReduce of `bytes` over `tp` devices of one domain.
  double TensorParallelAllReduce(int type, int tp, double bytes) const;
  // Activations (forward) or their gradient (backward) from one stage to the next. Each of the
  // min(tp_a, tp_b) rank pairs sends its slice in parallel, inside the domain when
  // `same_domain` (both stages then have the same device type) and over the inter-domain
  // network otherwise; plus what a message costs the stages themselves, the profile's
  // "message" part (the dearer of the two types') where measured.
  double PointToPoint(int type_a, int tp_a, int type_b, int tp_b, bool same_domain,
                      int micro_batch) const;
  // One message's cost to a stage of `type` (the profile's "message" part), 0 unmeasured.
  double MessageCost(int type, int tp, int micro_batch) const;
  // Hierarchical ring AllReduce of `bytes_per_device` gradient bytes held by each device:
  // reduce-scatter and all-gather among the `replicas_per_domain` replicas sharing a domain,
  // ring AllReduce of the 1/replicas_per_domain slice across `domains` domains.
  double DataParallelAllReduce(int type, double bytes_per_device, double replicas_per_domain,
                               int domains) const;

  // Bytes of one activation tensor [micro_batch, seq, hidden] in the activation format.
  double ActivationTensorBytes(int micro_batch) const;

 private:
  double Compute(int type, int tp, double flops) const;
  // The profile's times of `part` for (type, tp) at micro_batch; zero where it has none (the
  // fixed costs, kPass and kMessage, have no analytic estimate).
  PassTimes MeasuredOrZero(int type, int tp, int micro_batch, ProfilePart part) const;

  const ModelSpec& model_;
  const ClusterSpec& cluster_;
  const LayerProfile* profile_;
};

}  // namespace mixccl::train
