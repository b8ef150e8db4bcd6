// The model math of the reference trainer, forward and backward, in one file.
//
// Notation: B sequences per micro-batch, T tokens per sequence, C channels, NH heads of
// hs = C / NH channels, V vocabulary entries, N = B * T token positions. Arrays are row-major
// and the shape comment names the dimensions from the slowest to the fastest. A linear layer's
// weight is (OC, C), as in PyTorch: out = inp @ weight^T + bias.
//
// Every backward adds into its outputs (see gpt_model.h).
#include "mixccl/train/gpt_model.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "mixccl/train/rng.h"

namespace mixccl::train {

void ValidateGptConfig(const GptConfig& c) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("model config: " + what);
  };
  require(c.vocab_size >= 2, "vocab_size must be at least 2");
  require(c.seq_len >= 1, "seq_len must be at least 1");
  require(c.channels >= 1, "channels must be at least 1");
  require(c.num_heads >= 1 && c.channels % c.num_heads == 0,
          "num_heads must divide channels (" + std::to_string(c.channels) + ")");
  require(c.num_layers >= 1, "num_layers must be at least 1");
}

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

// ---------------------------------------------------------------------------------------------
// Parameters of a stage: one flat array, tensors in model order.

namespace {

// Tensors of one block, in their order in the flat array. `init` says the initialisation:
// 0 = zeros, 1 = ones, 2 = normal(0, 0.02), 3 = normal(0, 0.02 / sqrt(2 L)) for the two
// projections that write into the residual stream (GPT-2's scaled initialisation).
// `split` says how tensor parallelism cuts the tensor (see TensorSplit): kRows takes each
// rank's share of the rows of each of `parts` row blocks (QKV has three: Q, K and V, so a
// rank keeps whole heads of each), kCols each rank's share of the columns.
enum Split { kReplicated, kRows, kCols };
struct BlockTensorSpec {
  const char* name;
  int rows_c;  // rows in units of C
  int cols_c;  // columns in units of C; 0 for a vector (rows_c * C entries)
  int init;
  bool matrix;  // weight decay applies
  Split split;
  int parts;  // kRows: independent row blocks
};
constexpr BlockTensorSpec kBlockTensors[] = {
    {"ln1_w", 1, 0, 1, false, kReplicated, 1},  {"ln1_b", 1, 0, 0, false, kReplicated, 1},
    {"qkv_w", 3, 1, 2, true, kRows, 3},         {"qkv_b", 3, 0, 0, false, kRows, 3},
    {"proj_w", 1, 1, 3, true, kCols, 1},        {"proj_b", 1, 0, 0, false, kReplicated, 1},
    {"ln2_w", 1, 0, 1, false, kReplicated, 1},  {"ln2_b", 1, 0, 0, false, kReplicated, 1},
    {"fc_w", 4, 1, 2, true, kRows, 1},          {"fc_b", 4, 0, 0, false, kRows, 1},
    {"fcproj_w", 1, 4, 3, true, kCols, 1},      {"fcproj_b", 1, 0, 0, false, kReplicated, 1},
};
constexpr int kTensorsPerBlock = sizeof(kBlockTensors) / sizeof(kBlockTensors[0]);

const BlockTensorSpec* SpecOf(const ParamTensor& t) {
  if (t.name.compare(0, 5, "block") != 0) return nullptr;
  return &kBlockTensors[(t.global_id - 2) % kTensorsPerBlock];
}

// Rank `index`'s slice of a whole (rows, cols) tensor, as SpecOf's split says.
std::vector<float> SliceOf(const std::vector<float>& whole, const BlockTensorSpec& s, size_t C,
                           const TensorSplit& tp) {
  const size_t rows = s.rows_c * C, cols = s.cols_c == 0 ? 1 : s.cols_c * C;
  std::vector<float> out;
  if (s.split == kRows) {
    const size_t part_rows = rows / s.parts, mine = part_rows / tp.size;
    for (int p = 0; p < s.parts; ++p) {
      const size_t first = p * part_rows + tp.index * mine;
      out.insert(out.end(), whole.begin() + first * cols, whole.begin() + (first + mine) * cols);
    }
  } else {
    const size_t mine = cols / tp.size;
    for (size_t r = 0; r < rows; ++r) {
      const auto row = whole.begin() + r * cols + tp.index * mine;
      out.insert(out.end(), row, row + mine);
    }
  }
  return out;
}

}  // namespace

struct GptStage::BlockParams {
  float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
  float *ln2_w, *ln2_b, *fc_w, *fc_b, *fcproj_w, *fcproj_b;
};

GptStage::GptStage(const GptConfig& config, const StageRange& range, const TensorSplit& tp)
    : config_(config), range_(range), tp_(tp) {
  ValidateGptConfig(config);
  if (tp.size < 1 || tp.index < 0 || tp.index >= tp.size || config.num_heads % tp.size != 0) {
    throw std::invalid_argument("tensor parallelism " + std::to_string(tp.size) +
                                " must divide the " + std::to_string(config.num_heads) +
                                " heads (rank " + std::to_string(tp.index) + ")");
  }
  const int L = config.num_layers;
  if (range.first_layer < 0 || range.last_layer > L || range.first_layer > range.last_layer) {
    throw std::invalid_argument("stage layers [" + std::to_string(range.first_layer) + ", " +
                                std::to_string(range.last_layer) + ") are not within the " +
                                std::to_string(L) + " layers of the model");
  }
  if (range.recompute < 0 || range.recompute > range.num_blocks()) {
    throw std::invalid_argument("stage recomputes " + std::to_string(range.recompute) +
                                " layers but holds " + std::to_string(range.num_blocks()));
  }
  const size_t C = config.channels, V = config.vocab_size, T = config.seq_len;
  size_t offset = 0;
  auto add = [&](const std::string& name, int id, size_t size, bool decay, bool split = false) {
    tensors_.push_back({name, id, offset, size, decay, split});
    offset += size;
  };
  if (range.embedding) {
    add("wte", 0, V * C, true);
    add("wpe", 1, T * C, true);
  }
  for (int l = range.first_layer; l < range.last_layer; ++l) {
    for (int k = 0; k < kTensorsPerBlock; ++k) {
      const BlockTensorSpec& s = kBlockTensors[k];
      const bool split = s.split != kReplicated && tp.size > 1;
      const size_t size = s.rows_c * C * (s.cols_c == 0 ? 1 : s.cols_c * C) / (split ? tp.size : 1);
      add("block" + std::to_string(l) + "." + s.name, 2 + l * kTensorsPerBlock + k, size, s.matrix,
          split);
    }
  }
  if (range.head) {
    const int id = 2 + L * kTensorsPerBlock;
    add("lnf_w", id, C, false);
    add("lnf_b", id + 1, C, false);
    add("head_w", id + 2, V * C, true);
  }
  params_.assign(offset, 0.0f);
  grads_.assign(offset, 0.0f);
}

void GptStage::Init(std::uint64_t seed) {
  const float std_matrix = 0.02f;
  const float std_proj = 0.02f / std::sqrt(2.0f * config_.num_layers);
  const size_t C = config_.channels;
  for (const ParamTensor& t : tensors_) {
    const BlockTensorSpec* spec = SpecOf(t);
    int init = 2;  // embeddings and the head: normal(0, 0.02)
    if (t.name == "lnf_w") init = 1;
    if (t.name == "lnf_b") init = 0;
    if (spec != nullptr) init = spec->init;
    // A split tensor draws the whole tensor and keeps its slice, so the ranks together hold
    // exactly the single-process weights.
    std::vector<float> whole(t.tp_split ? t.size * tp_.size : t.size);
    Rng rng(MixSeed(seed, static_cast<std::uint64_t>(t.global_id)));
    for (float& x : whole) {
      switch (init) {
        case 0:
          x = 0.0f;
          break;
        case 1:
          x = 1.0f;
          break;
        case 2:
          x = std_matrix * static_cast<float>(rng.Normal());
          break;
        default:
          x = std_proj * static_cast<float>(rng.Normal());
          break;
      }
    }
    if (t.tp_split) whole = SliceOf(whole, *spec, C, tp_);
    std::copy(whole.begin(), whole.end(), params_.begin() + t.offset);
  }
}

const ParamTensor* GptStage::FindTensor(const std::string& name) const {
  for (const ParamTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

float* GptStage::Tensor(std::vector<float>& flat, const char* name) {
  return flat.data() + FindTensor(name)->offset;
}

void GptStage::ZeroGrads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

GptStage::BlockParams GptStage::BlockView(std::vector<float>& flat, int local_block) {
  const size_t first =
      (range_.embedding ? 2 : 0) + static_cast<size_t>(local_block) * kTensorsPerBlock;
  float* p[kTensorsPerBlock];
  for (int k = 0; k < kTensorsPerBlock; ++k) p[k] = flat.data() + tensors_[first + k].offset;
  return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11]};
}

void BlockActivations::Resize(int B, int T, int C, int Cl, int NHl) {
  const size_t N = static_cast<size_t>(B) * T;
  ln1.resize(N * C);
  ln1_mean.resize(N);
  ln1_rstd.resize(N);
  qkv.resize(N * 3 * Cl);
  att.resize(static_cast<size_t>(B) * NHl * T * T);
  atty.resize(N * Cl);
  res2.resize(N * C);
  ln2.resize(N * C);
  ln2_mean.resize(N);
  ln2_rstd.resize(N);
  fch.resize(N * 4 * Cl);
  fch_gelu.resize(N * 4 * Cl);
}

void GptStage::TpSum(float* data, size_t n) {
  if (tp_.size == 1) return;
  if (!tp_sum_) throw std::logic_error("a tensor-parallel stage needs SetTensorParallelSum");
  tp_sum_(data, n);
}

void GptStage::FinishRowParallel(float* out, const float* bias, int N, int OC) {
  TpSum(out, static_cast<size_t>(N) * OC);
  for (int n = 0; n < N; ++n) {
    float* o = out + static_cast<size_t>(n) * OC;
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}

// ---------------------------------------------------------------------------------------------
// One transformer block: x (B,T,C) -> out (B,T,C)
//   res2 = x + proj(attention(qkv(ln1(x))))
//   out  = res2 + fcproj(gelu(fc(ln2(res2))))
// With tensor parallelism a rank holds Cl = C/tp channels of Q, K, V (NHl = NH/tp heads) and
// 4Cl hidden units; the shapes below are a rank's. For tp = 1 the sums are no-ops and the
// order of operations is the plain model's.

void GptStage::BlockForward(int local_block, const float* x, float* out, BlockActivations& a,
                            int B) {
  const int T = config_.seq_len, C = config_.channels;
  const int Cl = C / tp_.size, NHl = config_.num_heads / tp_.size;
  const int N = B * T;
  a.Resize(B, T, C, Cl, NHl);
  const BlockParams p = BlockView(params_, local_block);
  LayerNormForward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, p.ln1_w, p.ln1_b, N, C);
  // qkv (N,3Cl): column-parallel, this rank's heads of Q, K and V
  MatmulForward(a.qkv.data(), a.ln1.data(), p.qkv_w, p.qkv_b, N, C, 3 * Cl);
  AttentionForward(a.atty.data(), a.att.data(), a.qkv.data(), B, T, Cl, NHl);
  // res2 (N,C): row-parallel over the rank's Cl attention channels, summed over the ranks
  MatmulForward(a.res2.data(), a.atty.data(), p.proj_w, nullptr, N, Cl, C);
  FinishRowParallel(a.res2.data(), p.proj_b, N, C);
  ResidualForward(a.res2.data(), x, a.res2.data(), N * C);
  LayerNormForward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(), p.ln2_w,
                   p.ln2_b, N, C);
  MatmulForward(a.fch.data(), a.ln2.data(), p.fc_w, p.fc_b, N, C, 4 * Cl);  // (N,4Cl)
  GeluForward(a.fch_gelu.data(), a.fch.data(), N * 4 * Cl);
  MatmulForward(out, a.fch_gelu.data(), p.fcproj_w, nullptr, N, 4 * Cl, C);  // (N,C) partial
  FinishRowParallel(out, p.fcproj_b, N, C);
  ResidualForward(out, a.res2.data(), out, N * C);
}

// dout (B,T,C) -> dx (B,T,C) added, parameter gradients added.
void GptStage::BlockBackward(int local_block, const float* x, const float* dout, float* dx,
                             BlockActivations& a, int B) {
  const int T = config_.seq_len, C = config_.channels;
  const int Cl = C / tp_.size, NHl = config_.num_heads / tp_.size;
  const int N = B * T;
  const size_t NC = static_cast<size_t>(N) * C, NCl = static_cast<size_t>(N) * Cl;
  const BlockParams p = BlockView(params_, local_block);
  const BlockParams g = BlockView(grads_, local_block);
  auto zeroed = [](std::vector<float>& v, size_t n) {
    v.assign(n, 0.0f);
    return v.data();
  };
  // out = res2 + fcproj(...): the residual passes dout to res2 unchanged.
  dres2_.assign(dout, dout + NC);
  float* dres2 = dres2_.data();
  float* dfch_gelu = zeroed(dfch_gelu_, 4 * NCl);
  MatmulBackward(dfch_gelu, g.fcproj_w, g.fcproj_b, dout, a.fch_gelu.data(), p.fcproj_w, N,
                 4 * Cl, C);
  float* dfch = zeroed(dfch_, 4 * NCl);
  GeluBackward(dfch, a.fch.data(), dfch_gelu, N * 4 * Cl);
  float* dln2 = zeroed(dln2_, NC);
  MatmulBackward(dln2, g.fc_w, g.fc_b, dfch, a.ln2.data(), p.fc_w, N, C, 4 * Cl);
  // ln2's output fed every rank's slice of fc: its gradient is the sum of the ranks' parts.
  TpSum(dln2, NC);
  LayerNormBackward(dres2, g.ln2_w, g.ln2_b, dln2, a.res2.data(), p.ln2_w, a.ln2_mean.data(),
                    a.ln2_rstd.data(), N, C);
  // res2 = x + proj(atty): the residual passes dres2 to x.
  for (size_t i = 0; i < NC; ++i) dx[i] += dres2[i];
  float* datty = zeroed(datty_, NCl);
  MatmulBackward(datty, g.proj_w, g.proj_b, dres2, a.atty.data(), p.proj_w, N, Cl, C);
  float* dqkv = zeroed(dqkv_, 3 * NCl);
  AttentionBackward(dqkv, datty, a.qkv.data(), a.att.data(), B, T, Cl, NHl);
  float* dln1 = zeroed(dln1_, NC);
  MatmulBackward(dln1, g.qkv_w, g.qkv_b, dqkv, a.ln1.data(), p.qkv_w, N, C, 3 * Cl);
  TpSum(dln1, NC);
  LayerNormBackward(dx, g.ln1_w, g.ln1_b, dln1, x, p.ln1_w, a.ln1_mean.data(), a.ln1_rstd.data(), N,
                    C);
}

// The stage: [embedding] -> blocks -> [final layernorm -> head (B,T,V) -> cross-entropy]

double GptStage::Forward(MicroBatchState& s, int B, const int* tokens, const int* targets,
                         const float* input) {
  const int T = config_.seq_len, C = config_.channels, V = config_.vocab_size;
  const int N = B * T;
  const size_t NC = static_cast<size_t>(N) * C;
  const int n = range_.num_blocks();
  s.B = B;
  s.T = T;
  s.x.resize(n + 1);
  for (auto& v : s.x) v.resize(NC);
  s.blocks.resize(n);
  if (range_.embedding) {
    s.tokens.assign(tokens, tokens + N);
    EncoderForward(s.x[0].data(), tokens, Tensor(params_, "wte"), Tensor(params_, "wpe"), B, T, C);
  } else {
    s.x[0].assign(input, input + NC);
  }
  for (int i = 0; i < n; ++i) {
    // A recomputed block runs into the shared scratch and keeps nothing but its output.
    const bool recompute = i < range_.recompute;
    BlockActivations& a = recompute ? recompute_scratch_ : s.blocks[i];
    BlockForward(i, s.x[i].data(), s.x[i + 1].data(), a, B);
    if (recompute) s.blocks[i] = BlockActivations();
  }
  s.loss_sum = 0.0;
  if (!range_.head) return 0.0;
  s.targets.assign(targets, targets + N);
  s.lnf.resize(NC);
  s.lnf_mean.resize(N);
  s.lnf_rstd.resize(N);
  s.probs.resize(static_cast<size_t>(N) * V);
  logits_.resize(static_cast<size_t>(N) * V);
  LayerNormForward(s.lnf.data(), s.lnf_mean.data(), s.lnf_rstd.data(), s.x[n].data(),
                   Tensor(params_, "lnf_w"), Tensor(params_, "lnf_b"), N, C);
  MatmulForward(logits_.data(), s.lnf.data(), Tensor(params_, "head_w"), nullptr, N, C, V);
  std::vector<float> losses(N);
  s.loss_sum = CrossEntropyForward(s.probs.data(), losses.data(), logits_.data(), targets, N, V);
  return s.loss_sum;
}

void GptStage::Backward(MicroBatchState& s, const float* doutput, float dloss) {
  const int B = s.B, T = config_.seq_len, C = config_.channels, V = config_.vocab_size;
  const int N = B * T;
  const size_t NC = static_cast<size_t>(N) * C;
  const int n = range_.num_blocks();
  // dres_ (B,T,C): gradient of the residual stream at the current block boundary.
  dres_.assign(NC, 0.0f);
  if (range_.head) {
    dlogits_.assign(static_cast<size_t>(N) * V, 0.0f);
    CrossEntropyBackward(dlogits_.data(), s.probs.data(), s.targets.data(), dloss, N, V);
    dlnf_.assign(NC, 0.0f);
    MatmulBackward(dlnf_.data(), Tensor(grads_, "head_w"), nullptr, dlogits_.data(), s.lnf.data(),
                   Tensor(params_, "head_w"), N, C, V);
    LayerNormBackward(dres_.data(), Tensor(grads_, "lnf_w"), Tensor(grads_, "lnf_b"), dlnf_.data(),
                      s.x[n].data(), Tensor(params_, "lnf_w"), s.lnf_mean.data(), s.lnf_rstd.data(),
                      N, C);
  } else {
    dres_.assign(doutput, doutput + NC);
  }
  for (int i = n - 1; i >= 0; --i) {
    BlockActivations* a = &s.blocks[i];
    if (i < range_.recompute) {
      // Recompute the forward from the kept block input; its output is already in x[i + 1],
      // and the recomputation is bitwise the same, so write it to a scratch instead.
      dres_prev_.resize(NC);
      BlockForward(i, s.x[i].data(), dres_prev_.data(), recompute_scratch_, B);
      a = &recompute_scratch_;
    }
    dres_prev_.assign(NC, 0.0f);
    BlockBackward(i, s.x[i].data(), dres_.data(), dres_prev_.data(), *a, B);
    dres_.swap(dres_prev_);
  }
  if (range_.embedding) {
    EncoderBackward(Tensor(grads_, "wte"), Tensor(grads_, "wpe"), dres_.data(), s.tokens.data(), B,
                    T, C);
  } else {
    s.dinput.assign(dres_.begin(), dres_.end());
  }
}

}  // namespace mixccl::train
