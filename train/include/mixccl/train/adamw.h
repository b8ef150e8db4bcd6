// AdamW (decoupled weight decay) with global-norm gradient clipping, over one flat parameter
// array. Clipping is split from the update because in a distributed run the norm covers every
// rank's gradients: the caller sums SumOfSquares over the ranks, then passes ClipScale to Step.
#pragma once

#include <cstddef>
#include <vector>

#include "mixccl/train/gpt_model.h"

namespace mixccl::train {

struct AdamWConfig {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;  // applied to tensors whose ParamTensor::decay is set
  float grad_clip = 1.0f;     // maximum global gradient norm; 0 disables clipping
};

// Sum of squares of n gradients, accumulated in double so the norm does not depend on how the
// parameters are split into stages beyond rounding of the final sum.
double SumOfSquares(const float* grads, std::size_t n);

// The factor that brings a gradient of global norm sqrt(sum_of_squares) to at most max_norm:
// min(1, max_norm / norm); 1 when clipping is off.
float ClipScale(double sum_of_squares, float max_norm);

// A contiguous part of the flat parameter array.
struct ParamRange {
  std::size_t offset = 0;
  std::size_t count = 0;
};

class AdamW {
 public:
  // Updates all n parameters.
  AdamW(const AdamWConfig& config, const std::vector<ParamTensor>& tensors, std::size_t n);
  // ZeRO-1: updates, and keeps moments for, only the `owned` ranges of the n parameters (this
  // rank's shards); the other replicas update the rest.
  AdamW(const AdamWConfig& config, const std::vector<ParamTensor>& tensors, std::size_t n,
        const std::vector<ParamRange>& owned);

  // One update of the owned parameters with gradients multiplied by grad_scale (the clip
  // factor). `params` and `grads` are the whole flat arrays.
  void Step(float* params, const float* grads, float grad_scale);

  const AdamWConfig& config() const { return config_; }
  const std::vector<ParamRange>& owned() const { return owned_; }
  std::size_t size() const { return n_; }
  // Optimizer state, for checkpoints, as arrays of all n parameters (zeros where not owned).
  void ExportMoments(std::vector<float>* m, std::vector<float>* v) const;
  void ImportMoments(const std::vector<float>& m, const std::vector<float>& v);
  // Floats of moments this rank holds (ZeRO-1: only its shards').
  std::size_t state_floats() const { return m_.size() + v_.size(); }
  long long steps() const { return t_; }
  void set_steps(long long t) { t_ = t; }

 private:
  AdamWConfig config_;
  std::size_t n_ = 0;
  std::vector<ParamRange> owned_;
  // Per owned parameter, the owned ranges one after another: weight decay applies, moments.
  std::vector<unsigned char> decay_;
  std::vector<float> m_, v_;
  long long t_ = 0;
};

}  // namespace mixccl::train
