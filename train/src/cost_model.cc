#include "mixccl/train/cost_model.h"

#include <algorithm>

namespace mixccl::train {

namespace {

// Ring AllReduce: 2(n-1)/n of the data crosses each link, in 2(n-1) latency-bound steps.
double RingAllReduce(double n, double bytes, double bandwidth_GBps, double latency_us) {
  if (n <= 1.0) return 0.0;
  return 2.0 * (n - 1.0) / n * bytes / (bandwidth_GBps * 1e9) + 2.0 * (n - 1.0) * latency_us * 1e-6;
}

}  // namespace

CostModel::CostModel(const ModelSpec& model, const ClusterSpec& cluster,
                     const LayerProfile* profile)
    : model_(model), cluster_(cluster), profile_(profile) {}

double CostModel::Compute(int type, int tp, double flops) const {
  return flops / tp / cluster_.device_types[type].achievable_flops();
}

double CostModel::ActivationTensorBytes(int micro_batch) const {
  return static_cast<double>(BytesPerElement(model_.param_dtype)) * micro_batch *
         model_.seq_length * model_.hidden_size;
}

double CostModel::TensorParallelAllReduce(int type, int tp, double bytes) const {
  const DeviceType& d = cluster_.device_types[type];
  return RingAllReduce(tp, bytes, d.domain_bandwidth_GBps, d.domain_latency_us);
}

PassTimes CostModel::Layer(int type, int tp, int micro_batch) const {
  PassTimes t;
  if (profile_ != nullptr && profile_->Lookup(cluster_.device_types[type].name, tp, micro_batch,
                                              &t.forward_s, &t.backward_s)) {
    return t;  // measured times already include the tensor-parallel AllReduce
  }
  const double compute = Compute(type, tp, micro_batch * LayerForwardFlopsPerSequence(model_));
  // Megatron-style tensor parallelism: one AllReduce after attention and one after the MLP in
  // the forward pass, and the two matching ones on the input gradients in the backward pass.
  const double allreduce = TensorParallelAllReduce(type, tp, ActivationTensorBytes(micro_batch));
  t.forward_s = compute + 2.0 * allreduce;
  t.backward_s = 2.0 * compute + 2.0 * allreduce;  // input and weight gradients
  return t;
}

PassTimes CostModel::Embedding(int type, int tp, int micro_batch) const {
  PassTimes t;
  if (profile_ != nullptr &&
      profile_->Lookup(cluster_.device_types[type].name, tp, micro_batch, &t.forward_s,
                       &t.backward_s, ProfilePart::kEmbedding)) {
    return t;
  }
  t.forward_s = TensorParallelAllReduce(type, tp, ActivationTensorBytes(micro_batch));
  return t;
}

PassTimes CostModel::Head(int type, int tp, int micro_batch) const {
  PassTimes t;
  if (profile_ != nullptr && profile_->Lookup(cluster_.device_types[type].name, tp, micro_batch,
                                              &t.forward_s, &t.backward_s, ProfilePart::kHead)) {
    return t;
  }
  const double compute = Compute(type, tp, micro_batch * HeadForwardFlopsPerSequence(model_));
  t.forward_s = compute;
  t.backward_s =
      2.0 * compute + TensorParallelAllReduce(type, tp, ActivationTensorBytes(micro_batch));
  return t;
}

PassTimes CostModel::StagePass(int type, int tp, int micro_batch) const {
  return MeasuredOrZero(type, tp, micro_batch, ProfilePart::kPass);  // unmeasured: no fixed cost
}

PassTimes CostModel::MeasuredOrZero(int type, int tp, int micro_batch, ProfilePart part) const {
  PassTimes t;
  if (profile_ != nullptr) {
    profile_->Lookup(cluster_.device_types[type].name, tp, micro_batch, &t.forward_s,
                     &t.backward_s, part);  // leaves t alone when unmeasured
  }
  return t;
}

double CostModel::Update(int type, double parameters) const {
  double per_parameter = 0.0;
  if (profile_ == nullptr ||
      !profile_->UpdateSecondsPerParameter(cluster_.device_types[type].name, &per_parameter)) {
    return 0.0;
  }
  return per_parameter * parameters;
}

double CostModel::PointToPoint(int type_a, int tp_a, int type_b, int tp_b, bool same_domain,
                               int micro_batch) const {
  const double streams = std::min(tp_a, tp_b);
  const double bytes = ActivationTensorBytes(micro_batch) / streams;
  double link = 0.0;
  if (same_domain) {
    const DeviceType& d = cluster_.device_types[type_a];
    link = bytes / (d.domain_bandwidth_GBps * 1e9) + d.domain_latency_us * 1e-6;
  } else {
    link = bytes / (cluster_.inter_bandwidth_GBps * 1e9) + cluster_.inter_latency_us * 1e-6;
  }
  return link + std::max(MessageCost(type_a, tp_a, micro_batch),
                         MessageCost(type_b, tp_b, micro_batch));
}

double CostModel::MessageCost(int type, int tp, int micro_batch) const {
  // The trainer's own work per message (posting it, the backend's hand-offs, the wake-ups):
  // a few hundred microseconds on CPU ranks, against the 20 us of a link's latency, and paid
  // once per micro-batch, so a plan of many small micro-batches pays it dozens of times.
  const PassTimes t = MeasuredOrZero(type, tp, micro_batch, ProfilePart::kMessage);
  return std::max(t.forward_s, t.backward_s);
}

double CostModel::DataParallelAllReduce(int type, double bytes_per_device,
                                        double replicas_per_domain, int domains) const {
  const DeviceType& d = cluster_.device_types[type];
  const double q = std::max(1.0, replicas_per_domain);
  double t = RingAllReduce(q, bytes_per_device, d.domain_bandwidth_GBps, d.domain_latency_us);
  t += RingAllReduce(domains, bytes_per_device / q, cluster_.inter_bandwidth_GBps,
                     cluster_.inter_latency_us);
  return t;
}

}  // namespace mixccl::train
