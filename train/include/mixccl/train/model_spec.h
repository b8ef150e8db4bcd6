// The model being trained: a LLaMA-style decoder-only transformer (RMSNorm, rotary positions,
// no biases), its training batch and its numeric formats.
#pragma once

#include <cstdint>
#include <string>

namespace mixccl::train {

enum class DType { kFp16, kBf16, kFp32 };

int BytesPerElement(DType dtype);
const char* DTypeName(DType dtype);

struct ModelSpec {
  std::string name;
  int num_layers = 0;
  int hidden_size = 0;
  int ffn_hidden_size = 0;
  int num_attention_heads = 0;
  int num_kv_heads = 0;  // grouped-query attention when smaller than num_attention_heads
  int vocab_size = 0;
  int seq_length = 0;                // tokens per sequence
  int global_batch_size = 0;         // sequences per optimizer step, kept exact by the planner
  DType param_dtype = DType::kBf16;  // also the activation format
  DType grad_dtype = DType::kBf16;
  bool zero1 = false;           // Adam states sharded over the data-parallel replicas
  bool gated_mlp = true;        // SwiGLU (three FFN matrices) rather than a two-matrix MLP
  bool flash_attention = true;  // attention scores are recomputed, never stored
  bool tie_embeddings = false;  // output projection shares the input embedding

  int head_dim() const { return hidden_size / num_attention_heads; }
  // Width of the K and V projections.
  int kv_hidden() const { return num_kv_heads * head_dim(); }
};

// Parse a model spec from JSON text; `origin` names the source in error messages. Throws
// SpecError on a missing, mistyped, out-of-range or unknown field.
ModelSpec ParseModelSpec(const std::string& json_text, const std::string& origin);
ModelSpec LoadModelSpec(const std::string& path);

// Parameter counts. Matrices are split over the tensor-parallel group; norm weights are
// replicated on every tensor-parallel rank.
std::int64_t LayerMatrixParams(const ModelSpec& m);  // Q, K, V, O and the FFN matrices
std::int64_t LayerNormParams(const ModelSpec& m);    // the two RMSNorm weight vectors
std::int64_t EmbeddingParams(const ModelSpec& m);    // vocab x hidden
std::int64_t TotalParams(const ModelSpec& m);

// Forward FLOPs of one transformer layer for one sequence (multiply-add = 2 FLOPs).
double LayerForwardFlopsPerSequence(const ModelSpec& m);
// Forward FLOPs of the output projection (logits) for one sequence.
double HeadForwardFlopsPerSequence(const ModelSpec& m);

}  // namespace mixccl::train
