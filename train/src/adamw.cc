#include "mixccl/train/adamw.h"

#include <algorithm>
#include <cmath>

namespace mixccl::train {

double SumOfSquares(const float* grads, std::size_t n) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(grads[i]) * grads[i];
  return s;
}

float ClipScale(double sum_of_squares, float max_norm) {
  if (max_norm <= 0.0f) return 1.0f;
  const double norm = std::sqrt(sum_of_squares);
  return norm > max_norm ? static_cast<float>(max_norm / norm) : 1.0f;
}

AdamW::AdamW(const AdamWConfig& config, const std::vector<ParamTensor>& tensors, std::size_t n)
    : AdamW(config, tensors, n, {{0, n}}) {}

AdamW::AdamW(const AdamWConfig& config, const std::vector<ParamTensor>& tensors, std::size_t n,
             const std::vector<ParamRange>& owned)
    : config_(config), n_(n), owned_(owned) {
  std::vector<unsigned char> decay(n, 0);
  for (const ParamTensor& t : tensors) {
    std::fill(decay.begin() + t.offset, decay.begin() + t.offset + t.size, t.decay ? 1 : 0);
  }
  for (const ParamRange& r : owned_) {
    decay_.insert(decay_.end(), decay.begin() + r.offset, decay.begin() + r.offset + r.count);
  }
  m_.assign(decay_.size(), 0.0f);
  v_.assign(decay_.size(), 0.0f);
}

void AdamW::ExportMoments(std::vector<float>* m, std::vector<float>* v) const {
  m->assign(n_, 0.0f);
  v->assign(n_, 0.0f);
  std::size_t k = 0;
  for (const ParamRange& r : owned_) {
    std::copy(m_.begin() + k, m_.begin() + k + r.count, m->begin() + r.offset);
    std::copy(v_.begin() + k, v_.begin() + k + r.count, v->begin() + r.offset);
    k += r.count;
  }
}

void AdamW::ImportMoments(const std::vector<float>& m, const std::vector<float>& v) {
  std::size_t k = 0;
  for (const ParamRange& r : owned_) {
    std::copy(m.begin() + r.offset, m.begin() + r.offset + r.count, m_.begin() + k);
    std::copy(v.begin() + r.offset, v.begin() + r.offset + r.count, v_.begin() + k);
    k += r.count;
  }
}

void AdamW::Step(float* params, const float* grads, float grad_scale) {
  ++t_;
  const AdamWConfig& c = config_;
  // Bias corrections of the moment estimates (they start at zero).
  const float correction1 = 1.0f - std::pow(c.beta1, static_cast<float>(t_));
  const float correction2 = 1.0f - std::pow(c.beta2, static_cast<float>(t_));
  std::size_t k = 0;  // index into the owned state
  for (const ParamRange& r : owned_) {
    for (std::size_t i = r.offset; i < r.offset + r.count; ++i, ++k) {
      const float g = grads[i] * grad_scale;
      m_[k] = c.beta1 * m_[k] + (1.0f - c.beta1) * g;
      v_[k] = c.beta2 * v_[k] + (1.0f - c.beta2) * g * g;
      const float m_hat = m_[k] / correction1;
      const float v_hat = v_[k] / correction2;
      const float decay = decay_[k] ? c.weight_decay * params[i] : 0.0f;
      params[i] -= c.learning_rate * (m_hat / (std::sqrt(v_hat) + c.eps) + decay);
    }
  }
}

}  // namespace mixccl::train
