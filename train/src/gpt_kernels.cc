// The reference trainer's kernels, forward and backward: embedding, LayerNorm, linear layers,
// causal attention, GELU, residuals and softmax cross-entropy. gpt_model.cc puts them together
// into a stage's blocks.
//
// Notation: B sequences per micro-batch, T tokens per sequence, C channels, NH heads of
// hs = C / NH channels, V vocabulary entries, N = B * T token positions. Arrays are row-major
// and the shape comment names the dimensions from the slowest to the fastest. A linear layer's
// weight is (OC, C), as in PyTorch: out = inp @ weight^T + bias.
//
// Every backward adds into its outputs (see gpt_model.h).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mixccl/train/gpt_model.h"

namespace mixccl::train {

// ---------------------------------------------------------------------------------------------
// Embedding: out (B,T,C) = wte[tokens] (V,C) + wpe[position] (T,C)

void EncoderForward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                    int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<size_t>(b) * T + t) * C;
      const float* tok = wte + static_cast<size_t>(tokens[b * T + t]) * C;
      const float* pos = wpe + static_cast<size_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = tok[i] + pos[i];
    }
  }
}

void EncoderBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                     int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const float* d = dout + (static_cast<size_t>(b) * T + t) * C;
      float* dtok = dwte + static_cast<size_t>(tokens[b * T + t]) * C;
      float* dpos = dwpe + static_cast<size_t>(t) * C;
      for (int i = 0; i < C; ++i) {
        dtok[i] += d[i];
        dpos[i] += d[i];
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// LayerNorm over the last dimension: inp (N,C) -> out (N,C); keeps mean (N) and 1/std (N).

void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int N, int C) {
  const float eps = 1e-5f;
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    float m = 0.0f;
    for (int i = 0; i < C; ++i) m += x[i];
    m /= C;
    float v = 0.0f;
    for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const float s = 1.0f / std::sqrt(v + eps);
    float* o = out + static_cast<size_t>(n) * C;
    for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

void LayerNormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int N, int C) {
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<size_t>(n) * C;
    const float* d = dout + static_cast<size_t>(n) * C;
    float* dx = dinp + static_cast<size_t>(n) * C;
    // With xhat = (x - mean) * rstd and g = dout * weight (the gradient of xhat):
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    float g_mean = 0.0f, g_xhat_mean = 0.0f;
    for (int i = 0; i < C; ++i) {
      const float xhat = (x[i] - mean[n]) * rstd[n];
      const float g = d[i] * weight[i];
      g_mean += g;
      g_xhat_mean += g * xhat;
    }
    g_mean /= C;
    g_xhat_mean /= C;
    for (int i = 0; i < C; ++i) {
      const float xhat = (x[i] - mean[n]) * rstd[n];
      const float g = d[i] * weight[i];
      dx[i] += rstd[n] * (g - g_mean - xhat * g_xhat_mean);
      dweight[i] += d[i] * xhat;
      dbias[i] += d[i];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Linear layer: out (N,OC) = inp (N,C) @ weight^T (C,OC) + bias (OC); bias may be null.

void MatmulForward(float* out, const float* inp, const float* weight, const float* bias, int N,
                   int C, int OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C, 0.0f, out,
              OC);
  if (bias == nullptr) return;
  for (int n = 0; n < N; ++n) {
    float* o = out + static_cast<size_t>(n) * OC;
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

void MatmulBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                    const float* weight, int N, int C, int OC) {
  // dinp (N,C) += dout (N,OC) @ weight (OC,C)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f,
              dinp, C);
  // dweight (OC,C) += dout^T (OC,N) @ inp (N,C)
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f,
              dweight, C);
  if (dbias == nullptr) return;
  for (int n = 0; n < N; ++n) {
    const float* d = dout + static_cast<size_t>(n) * OC;
    for (int j = 0; j < OC; ++j) dbias[j] += d[j];
  }
}

// ---------------------------------------------------------------------------------------------
// Causal self-attention. qkv (B,T,3C) holds Q, K and V side by side; head h of Q is the column
// range [h*hs, (h+1)*hs), of K the same plus C, of V plus 2C. For each (b, h):
//   att (T,T) = softmax(mask(Q K^T / sqrt(hs)))  with position t seeing positions <= t
//   out[:, h*hs:(h+1)*hs] (T,hs) = att (T,T) @ V (T,hs)
// att is kept (B,NH,T,T) for the backward. The masked upper triangle is stored as zeros, so
// the full-size products below give the causal result without special cases.

void AttentionForward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv + static_cast<size_t>(b) * T * C3 + h * hs;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
      // a (T,T) = scale * Q (T,hs) @ K^T (hs,T)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3, 0.0f, a,
                  T);
      for (int t = 0; t < T; ++t) {
        float* row = a + static_cast<size_t>(t) * T;
        float maxv = row[0];
        for (int u = 1; u <= t; ++u) maxv = std::max(maxv, row[u]);
        float sum = 0.0f;
        for (int u = 0; u <= t; ++u) {
          row[u] = std::exp(row[u] - maxv);
          sum += row[u];
        }
        const float inv = 1.0f / sum;
        for (int u = 0; u <= t; ++u) row[u] *= inv;
        for (int u = t + 1; u < T; ++u) row[u] = 0.0f;
      }
      // out_h (T,hs) = a (T,T) @ V (T,hs); out's rows are C apart
      float* o = out + static_cast<size_t>(b) * T * C + h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3, 0.0f, o,
                  C);
    }
  }
}

void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                       int T, int C, int NH) {
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::vector<float> datt(static_cast<size_t>(T) * T);  // (T,T), then the pre-softmax gradient
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const size_t head = static_cast<size_t>(b) * T * C3 + h * hs;
      const float* q = qkv + head;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = dqkv + head;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
      const float* d = dout + static_cast<size_t>(b) * T * C + h * hs;
      // datt (T,T) = dout_h (T,hs) @ V^T (hs,T)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, d, C, v, C3, 0.0f,
                  datt.data(), T);
      // dV (T,hs) += a^T (T,T) @ dout_h (T,hs)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, d, C, 1.0f, dv,
                  C3);
      // Softmax backward, row by row: dpre = a * (datt - sum(a * datt)), times the 1/sqrt(hs)
      // of the forward. Masked entries have a = 0 and so get 0.
      for (int t = 0; t < T; ++t) {
        const float* arow = a + static_cast<size_t>(t) * T;
        float* drow = datt.data() + static_cast<size_t>(t) * T;
        float dot = 0.0f;
        for (int u = 0; u <= t; ++u) dot += arow[u] * drow[u];
        for (int u = 0; u < T; ++u) drow[u] = scale * arow[u] * (drow[u] - dot);
      }
      // dQ (T,hs) += dpre (T,T) @ K (T,hs);  dK (T,hs) += dpre^T (T,T) @ Q (T,hs)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, datt.data(), T, k, C3,
                  1.0f, dq, C3);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, datt.data(), T, q, C3,
                  1.0f, dk, C3);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2): out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

// tanh(u) = 1 - 2 / (exp(2u) + 1). libm's tanhf goes through expm1f to stay accurate near 0
// and made GELU a third of the whole step (perf, C = 128); this form costs one expf. Its
// absolute error (~1e-7, from the cancellation near 0) is harmless in 0.5 x (1 + tanh).
// exp overflowing to inf gives exactly 1, and underflowing to 0 exactly -1.
inline float Tanh(float u) { return 1.0f - 2.0f / (std::exp(2.0f * u) + 1.0f); }
}

void GeluForward(float* out, const float* inp, int n) {
  for (int i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + Tanh(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

void GeluBackward(float* dinp, const float* inp, const float* dout, int n) {
  for (int i = 0; i < n; ++i) {
    const float x = inp[i];
    const float th = Tanh(kGeluScale * (x + 0.044715f * x * x * x));
    const float dth = (1.0f - th * th) * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += dout[i] * (0.5f * (1.0f + th) + 0.5f * x * dth);
  }
}

void ResidualForward(float* out, const float* a, const float* b, int n) {
  for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

// ---------------------------------------------------------------------------------------------
// Softmax and cross-entropy: logits (N,V) -> probs (N,V), losses (N) = -log probs[target].

double CrossEntropyForward(float* probs, float* losses, const float* logits, const int* targets,
                           int N, int V) {
  double total = 0.0;
  for (int n = 0; n < N; ++n) {
    const float* l = logits + static_cast<size_t>(n) * V;
    float* p = probs + static_cast<size_t>(n) * V;
    float maxv = l[0];
    for (int i = 1; i < V; ++i) maxv = std::max(maxv, l[i]);
    float sum = 0.0f;
    for (int i = 0; i < V; ++i) {
      p[i] = std::exp(l[i] - maxv);
      sum += p[i];
    }
    const float inv = 1.0f / sum;
    for (int i = 0; i < V; ++i) p[i] *= inv;
    losses[n] = -std::log(p[targets[n]]);
    total += losses[n];
  }
  return total;
}

void CrossEntropyBackward(float* dlogits, const float* probs, const int* targets, float dloss,
                          int N, int V) {
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<size_t>(n) * V;
    float* d = dlogits + static_cast<size_t>(n) * V;
    for (int i = 0; i < V; ++i) d[i] += dloss * (p[i] - (i == targets[n] ? 1.0f : 0.0f));
  }
}

}  // namespace mixccl::train
