// Measured per-layer times that replace the analytic compute estimate where they are known.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace mixccl::train {

struct ProfilePoint {
  int micro_batch = 0;
  double forward_s = 0.0;         // one transformer layer, including its tensor-parallel AllReduce
  double backward_s = 0.0;        // idem, without recomputation
  double activation_bytes = 0.0;  // what the layer keeps per micro-batch; 0: not measured
};

// What an entry measured: a transformer layer (the default), or the embedding or the head
// (final norm, output projection and loss) of the first and last stage, or the fixed cost of
// one forward and one backward pass of any stage whatever its layers (kPass: starting the pass
// and the autograd engine, the per-pass Python of the step), which makes a stage of few
// layers on small micro-batches dearer per layer than a deep one. The trainer's profiling
// mode measures the first three, mixccl.train's all four; where a part has no entry the
// analytic estimate applies (for kPass: none, the analytic model has no fixed cost).
// kMessage (profile part "message", mixccl.train on CPU): what a stage pays per micro-batch
// to send its activations or gradients to a neighbour and take the neighbour's (posting the
// send and the receive through the trainer's backend, the hand-offs and wake-ups), forward
// and backward alike; the link's own time (bytes over bandwidth, latency) comes on top.
enum class ProfilePart { kLayer, kEmbedding, kHead, kPass, kMessage };

class LayerProfile {
 public:
  // Adds a measurement; a second one for the same (type, tp, micro-batch) replaces the first.
  void Add(const std::string& device_type, int tp, const ProfilePoint& point,
           ProfilePart part = ProfilePart::kLayer);

  // Times of one layer for (device type, tp) at `micro_batch` sequences, when that pair was
  // measured. Between measured micro-batch sizes the times are interpolated linearly; outside
  // them they are scaled in proportion to the micro-batch from the nearest measurement (a
  // layer's work is linear in the number of sequences), except kPass and kMessage, fixed
  // costs, which keep the nearest measurement's times. Returns false when the pair has no
  // measurement, in which case the analytic estimate applies.
  bool Lookup(const std::string& device_type, int tp, int micro_batch, double* forward_s,
              double* backward_s, ProfilePart part = ProfilePart::kLayer) const;

  // The per-step work of a rank outside its forward and backward passes (zeroing the
  // gradients, their norm, the optimizer update), measured for `parameters` parameters on
  // `device_type`: linear in the parameters the rank holds (profile part "update").
  void AddUpdate(const std::string& device_type, double parameters, double seconds);
  // Seconds per parameter of that work on `device_type`; false when not measured.
  bool UpdateSecondsPerParameter(const std::string& device_type, double* seconds) const;

  bool empty() const { return table_.empty() && update_.empty(); }
  // Device types with at least one measurement.
  std::vector<std::string> device_types() const;
  int seq_length() const { return seq_length_; }
  void set_seq_length(int s) { seq_length_ = s; }
  const std::string& model() const { return model_; }
  void set_model(const std::string& m) { model_ = m; }

 private:
  using Key = std::tuple<ProfilePart, std::string, int>;  // part, device type, tp
  std::map<Key, std::vector<ProfilePoint>> table_;        // sorted by micro-batch
  std::map<std::string, double> update_;                  // seconds per parameter, by type
  int seq_length_ = 0;                                    // 0 when the profile does not say
  std::string model_;
};

LayerProfile ParseProfile(const std::string& json_text, const std::string& origin);
LayerProfile LoadProfile(const std::string& path);

}  // namespace mixccl::train
