// A stage of the reference trainer's model: its parameters (one flat array, tensor parallel
// slices), and its blocks and whole forward and backward built from the kernels of
// gpt_kernels.cc (whose notation this file uses: B, T, C, NH, hs, V, N).
#include "mixccl/train/gpt_model.h"

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
