#include "mixccl/train/memory_model.h"

#include <cmath>

namespace mixccl::train {

double MemoryModel::StageParams(const StageMemoryQuery& q) const {
  const double tp = q.tp;
  double params = q.num_layers * (LayerMatrixParams(model_) / tp + LayerNormParams(model_));
  // Vocabulary-parallel embedding and output projection: each rank holds V/tp rows.
  const double vocab_rows = std::ceil(static_cast<double>(model_.vocab_size) / q.tp);
  const double vocab_slice = vocab_rows * model_.hidden_size;
  if (q.has_embedding) params += vocab_slice;
  if (q.has_head) {
    // With tied embeddings the head reuses the embedding when both are on this stage;
    // otherwise the last stage keeps its own copy (as Megatron-LM does).
    const bool shared = model_.tie_embeddings && q.has_embedding;
    if (!shared) params += vocab_slice;
    params += model_.hidden_size;  // final norm
  }
  return params;
}

int MemoryModel::OptimizerBytesPerParam() const {
  // Adam keeps fp32 first and second moments; with 16-bit weights it also keeps an fp32 master
  // copy. With bf16 weights and gradients that is 2 + 2 + 12 = 16 bytes per parameter.
  return model_.param_dtype == DType::kFp32 ? 8 : 12;
}

double MemoryModel::LayerActivationBytes(int tp, int micro_batch) const {
  const double e = BytesPerElement(model_.param_dtype);
  const double sb = static_cast<double>(model_.seq_length) * micro_batch;
  const double h = model_.hidden_size, kv = model_.kv_hidden(), f = model_.ffn_hidden_size;
  // Replicated on every tensor-parallel rank: the inputs of the two RMSNorms and their
  // outputs (the inputs of the QKV and gate/up projections): 4 s b h elements.
  const double replicated = 4.0 * h;
  // Split over the tensor-parallel ranks: Q, K, V and the attention output (input of the
  // output projection); gate and up projections, SiLU output and their product (input of the
  // down projection) for a gated MLP, or the up projection and activation otherwise.
  const double split = 2.0 * h + 2.0 * kv + (model_.gated_mlp ? 4.0 : 2.0) * f;
  double bytes = e * sb * (replicated + split / tp);
  if (!model_.flash_attention) {
    // Without a fused attention kernel the softmax output (heads x s x s) is kept.
    bytes += e * sb * model_.num_attention_heads * static_cast<double>(model_.seq_length) / tp;
  }
  return bytes;
}

double MemoryModel::RecomputedLayerActivationBytes(int micro_batch) const {
  return static_cast<double>(BytesPerElement(model_.param_dtype)) * model_.seq_length *
         micro_batch * model_.hidden_size;
}

double MemoryModel::HeadActivationBytes(int tp, int micro_batch) const {
  const double e = BytesPerElement(model_.param_dtype);
  const double sb = static_cast<double>(model_.seq_length) * micro_batch;
  const double vocab = std::ceil(static_cast<double>(model_.vocab_size) / tp);
  // Final-norm input and output, then this rank's logits in the activation format and their
  // fp32 softmax kept by the cross-entropy for its backward.
  return e * sb * 2.0 * model_.hidden_size + (e + 4.0) * sb * vocab;
}

MemoryBreakdown MemoryModel::Stage(const StageMemoryQuery& q, double reserved_bytes) const {
  MemoryBreakdown m;
  const double params = StageParams(q);
  m.weights_bytes = params * BytesPerElement(model_.param_dtype);
  m.gradient_bytes = params * BytesPerElement(model_.grad_dtype);
  m.optimizer_bytes = params * OptimizerBytesPerParam();
  if (model_.zero1) m.optimizer_bytes /= q.optimizer_shards;
  const double full = LayerActivationBytes(q.tp, q.micro_batch);
  const double kept = RecomputedLayerActivationBytes(q.micro_batch);
  const double per_micro_batch =
      (q.num_layers - q.recomputed_layers) * full + q.recomputed_layers * kept;
  m.activation_bytes = q.in_flight * per_micro_batch;
  // The backward pass of a recomputed layer rebuilds its full activations for one micro-batch.
  if (q.recomputed_layers > 0) m.activation_bytes += full;
  if (q.has_head) m.activation_bytes += HeadActivationBytes(q.tp, q.micro_batch);
  m.reserved_bytes = reserved_bytes;
  return m;
}

int MemoryModel::MinRecomputedLayers(StageMemoryQuery q, double reserved_bytes,
                                     double capacity_bytes) const {
  q.recomputed_layers = 0;
  if (Stage(q, reserved_bytes).total_bytes() <= capacity_bytes) return 0;
  if (q.num_layers == 0) return -1;
  // For r >= 1 the total falls linearly with r by in_flight * (full - kept) per layer.
  q.recomputed_layers = 1;
  const double at_one = Stage(q, reserved_bytes).total_bytes();
  const double saving = q.in_flight * (LayerActivationBytes(q.tp, q.micro_batch) -
                                       RecomputedLayerActivationBytes(q.micro_batch));
  int r = 1;
  if (at_one > capacity_bytes) {
    if (saving <= 0.0) return -1;
    r = 1 + static_cast<int>(std::ceil((at_one - capacity_bytes) / saving));
  }
  if (r > q.num_layers) r = q.num_layers + 1;
  // Guard against rounding in the division: settle on the exact smallest r.
  auto fits = [&](int layers) {
    q.recomputed_layers = layers;
    return Stage(q, reserved_bytes).total_bytes() <= capacity_bytes;
  };
  while (r > 1 && fits(r - 1)) --r;
  while (r <= q.num_layers && !fits(r)) ++r;
  return r <= q.num_layers ? r : -1;
}

}  // namespace mixccl::train
