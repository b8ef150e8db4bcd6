// The reference trainer's model: a GPT-2-style decoder in fp32 on the CPU. Token + position
// embedding, N blocks of (layernorm, causal self-attention, residual, layernorm, MLP with GELU,
// residual), a final layernorm, an untied output head and the cross-entropy loss.
//
// The layer kernels are free functions, each a forward/backward pair over plain arrays (shapes
// in the comments of gpt_model.cc), so the gradient checks can test them one by one. GptStage
// holds the parameters of a contiguous part of the model (what one pipeline stage runs): the
// whole model is the stage with every block, the embedding and the head.
//
// Every backward ADDS into its gradient outputs (inputs and parameters alike): micro-batches
// then accumulate into one gradient without extra copies, as in llm.c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixccl::train {

struct GptConfig {
  int vocab_size = 256;  // V; the default data are bytes
  int seq_len = 64;      // T: tokens per sequence, also the rows of the position table
  int channels = 64;     // C
  int num_heads = 4;     // NH; divides C
  int num_layers = 4;    // L
};

// Throws std::invalid_argument naming the first bad field.
void ValidateGptConfig(const GptConfig& c);

// ----- layer kernels -----
void EncoderForward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                    int C);
void EncoderBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                     int C);
void LayerNormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int N, int C);
void LayerNormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int N, int C);
void MatmulForward(float* out, const float* inp, const float* weight, const float* bias, int N,
                   int C, int OC);
void MatmulBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                    const float* weight, int N, int C, int OC);
void AttentionForward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att, int B,
                       int T, int C, int NH);
void GeluForward(float* out, const float* inp, int n);
void GeluBackward(float* dinp, const float* inp, const float* dout, int n);
void ResidualForward(float* out, const float* a, const float* b, int n);
// Returns the sum of the N token losses (double: it is only reported, never differentiated).
double CrossEntropyForward(float* probs, float* losses, const float* logits, const int* targets,
                           int N, int V);
// dlogits += dloss * d(loss of each token)/d(logits); dloss is the weight of one token's loss
// in the objective (1 / tokens of the global batch when the objective is the mean loss).
void CrossEntropyBackward(float* dlogits, const float* probs, const int* targets, float dloss,
                          int N, int V);

// ----- a contiguous part of the model -----

// Megatron-style tensor parallelism within a stage: `size` ranks split every block. Rank
// `index` holds heads [index*NH/size, (index+1)*NH/size) of the attention (their rows of the
// QKV matrix, column-parallel) and the matching input columns of the output projection
// (row-parallel), and likewise 4C/size hidden units of the MLP (rows of fc, columns of
// fcproj). Each row-parallel product leaves a partial sum that one AllReduce completes before
// the bias; in the backward the gradients of the two layernorm outputs are summed the same way.
// Layernorms, biases of the projections, the embedding and the head are replicated: every
// rank computes them on the same data, so their gradients agree without communication.
struct TensorSplit {
  int size = 1;
  int index = 0;
};
// In-place sum over the stage's tensor-parallel ranks (mixcclAllReduce in the trainer).
using TensorParallelSum = std::function<void(float* data, std::size_t n)>;

// Blocks [first_layer, last_layer), plus the embedding on the first stage and the final
// layernorm, head and loss on the last.
struct StageRange {
  int first_layer = 0;
  int last_layer = 0;
  bool embedding = true;
  bool head = true;
  int recompute = 0;  // the first `recompute` blocks of the range recompute their activations

  static StageRange Whole(const GptConfig& c) { return {0, c.num_layers, true, true, 0}; }
  int num_blocks() const { return last_layer - first_layer; }
};

struct ParamTensor {
  std::string name;  // "wte", "block3.qkv_w", "head_w", ...
  int global_id;     // position in the whole model's tensor list: seeds its initial values
  std::size_t offset;
  std::size_t size;
  bool decay;  // AdamW weight decay applies: matrices and embeddings, not biases or norms
  // Split over the tensor-parallel ranks (each holds a slice); replicated tensors are not.
  // The gradient norm counts a replicated tensor once, a split one on every rank.
  bool tp_split = false;
};

// Per-block activations kept from forward to backward.
struct BlockActivations {
  std::vector<float> ln1, ln1_mean, ln1_rstd;  // (B,T,C) (B,T) (B,T)
  std::vector<float> qkv;                      // (B,T,3C)
  std::vector<float> att;                      // (B,NH,T,T) softmax, zero above the diagonal
  std::vector<float> atty;                     // (B,T,C) attention output before projection
  std::vector<float> res2;                     // (B,T,C) input + attention projection
  std::vector<float> ln2, ln2_mean, ln2_rstd;  // (B,T,C) (B,T) (B,T)
  std::vector<float> fch, fch_gelu;            // (B,T,4C)
  // Cl = C / tp channels and NHl = NH / tp heads of this tensor-parallel rank.
  void Resize(int B, int T, int C, int Cl, int NHl);
};

// Everything one micro-batch leaves on a stage between its forward and its backward.
struct MicroBatchState {
  int B = 0;
  int T = 0;
  std::vector<int> tokens, targets;      // (B,T), embedding / head stage
  std::vector<std::vector<float>> x;     // x[i] (B,T,C): input of block i; x[n] the stage output
  std::vector<BlockActivations> blocks;  // empty for recomputed blocks
  std::vector<float> lnf, lnf_mean, lnf_rstd, probs;  // head stage: (B,T,C) (B,T) (B,T) (B,T,V)
  std::vector<float> dinput;  // (B,T,C) gradient of the stage input (not on the embedding stage)
  double loss_sum = 0.0;      // head stage: summed token losses of the micro-batch
};

class GptStage {
 public:
  // Throws std::invalid_argument for a range or split that does not fit the config.
  GptStage(const GptConfig& config, const StageRange& range, const TensorSplit& tp = {});

  // Required before Forward when tp.size > 1: every block calls it twice in the forward and
  // twice in the backward, in the same order on every tensor-parallel rank.
  void SetTensorParallelSum(TensorParallelSum sum) { tp_sum_ = std::move(sum); }

  // GPT-2 initialisation. Each tensor draws from its own generator seeded by (seed, global_id),
  // so a stage's initial weights equal the same layers' weights in the whole model.
  void Init(std::uint64_t seed);

  // One micro-batch of B sequences of the config's length. The embedding stage reads `tokens`
  // (B,T), the others `input` (B,T,C); the head stage reads `targets` (B,T) and returns the
  // summed loss, the others return 0 and leave their output in state.x.back().
  double Forward(MicroBatchState& state, int B, const int* tokens, const int* targets,
                 const float* input);
  // `doutput` (B,T,C) is the gradient of the stage output (ignored on the head stage, where
  // the loss starts the chain with weight `dloss` per token). Adds to grads(); a non-embedding
  // stage leaves the gradient of its input in state.dinput.
  void Backward(MicroBatchState& state, const float* doutput, float dloss);

  const GptConfig& config() const { return config_; }
  const StageRange& range() const { return range_; }
  const TensorSplit& tensor_split() const { return tp_; }
  std::vector<float>& params() { return params_; }
  std::vector<float>& grads() { return grads_; }
  const std::vector<float>& params() const { return params_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  // Head stage: the logits (B,T,V) of the last micro-batch's Forward.
  const std::vector<float>& logits() const { return logits_; }
  const ParamTensor* FindTensor(const std::string& name) const;
  void ZeroGrads();

 private:
  struct BlockParams;  // views into params_ or grads_
  BlockParams BlockView(std::vector<float>& flat, int local_block);
  void BlockForward(int local_block, const float* x, float* out, BlockActivations& a, int B);
  void BlockBackward(int local_block, const float* x, const float* dout, float* dx,
                     BlockActivations& a, int B);
  float* Tensor(std::vector<float>& flat, const char* name);
  // Completes a row-parallel product: the partial sums over the ranks, then the bias.
  void FinishRowParallel(float* out, const float* bias, int N, int OC);
  void TpSum(float* data, std::size_t n);

  GptConfig config_;
  StageRange range_;
  TensorSplit tp_;
  TensorParallelSum tp_sum_;
  std::vector<ParamTensor> tensors_;
  std::vector<float> params_, grads_;
  // Scratch reused by every micro-batch: recomputed activations, logits, gradient buffers.
  BlockActivations recompute_scratch_;
  std::vector<float> logits_, dlogits_, dres_, dres_prev_, dlnf_;
  std::vector<float> dres2_, dfch_gelu_, dfch_, dln2_, datty_, dqkv_, dln1_;
};

}  // namespace mixccl::train
