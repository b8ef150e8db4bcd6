// Measured per-layer times that replace the analytic compute estimate where they are known.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mixccl::train {

struct ProfilePoint {
  int micro_batch = 0;
  double forward_s = 0.0;   // one transformer layer, including its tensor-parallel AllReduce
  double backward_s = 0.0;  // idem, without recomputation
};

class LayerProfile {
 public:
  // Adds a measurement; a second one for the same (type, tp, micro-batch) replaces the first.
  void Add(const std::string& device_type, int tp, const ProfilePoint& point);

  // Times of one layer for (device type, tp) at `micro_batch` sequences, when that pair was
  // measured. Between measured micro-batch sizes the times are interpolated linearly; outside
  // them they are scaled in proportion to the micro-batch from the nearest measurement (a
  // layer's work is linear in the number of sequences). Returns false when the pair has no
  // measurement, in which case the analytic estimate applies.
  bool Lookup(const std::string& device_type, int tp, int micro_batch, double* forward_s,
              double* backward_s) const;

  bool empty() const { return table_.empty(); }
  // Device types with at least one measurement.
  std::vector<std::string> device_types() const;
  int seq_length() const { return seq_length_; }
  void set_seq_length(int s) { seq_length_ = s; }
  const std::string& model() const { return model_; }
  void set_model(const std::string& m) { model_ = m; }

 private:
  std::map<std::pair<std::string, int>, std::vector<ProfilePoint>> table_;  // sorted by mb
  int seq_length_ = 0;  // 0 when the profile does not say
  std::string model_;
};

LayerProfile ParseProfile(const std::string& json_text, const std::string& origin);
LayerProfile LoadProfile(const std::string& path);

}  // namespace mixccl::train
