#include "mixccl/train/model_spec.h"

#include "json_fields.h"
#include "mixccl/train/spec_error.h"

namespace mixccl::train {

int BytesPerElement(DType dtype) {
  switch (dtype) {
    case DType::kFp16:
    case DType::kBf16:
      return 2;
    case DType::kFp32:
      return 4;
  }
  return 4;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
    case DType::kFp32:
      return "fp32";
  }
  return "?";
}

namespace {

DType ReadDType(const detail::FieldReader& r, const char* key, DType fallback) {
  if (!r.Has(key)) return fallback;
  std::string name = r.String(key);
  if (name == "bf16") return DType::kBf16;
  if (name == "fp16") return DType::kFp16;
  if (name == "fp32") return DType::kFp32;
  throw SpecError(r.where() + ": field '" + key +
                  "' must be \"bf16\", \"fp16\" or \"fp32\", got \"" + name + "\"");
}

void Require(bool ok, const std::string& where, const std::string& what) {
  if (!ok) throw SpecError(where + ": " + what);
}

}  // namespace

ModelSpec ParseModelSpec(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = detail::ParseJson(json_text, origin);
  const std::string where = "model spec " + origin;
  detail::FieldReader r(doc, where);
  r.RejectUnknown({"name", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
                   "num_kv_heads", "vocab_size", "seq_length", "global_batch_size", "param_dtype",
                   "grad_dtype", "optimizer", "gated_mlp", "flash_attention", "tie_embeddings"});
  ModelSpec m;
  m.name = r.String("name");
  m.num_layers = r.Int("num_layers", 1, 100000);
  m.hidden_size = r.Int("hidden_size", 1, 1 << 20);
  m.ffn_hidden_size = r.Int("ffn_hidden_size", 1, 1 << 22);
  m.num_attention_heads = r.Int("num_attention_heads", 1, 1 << 14);
  m.num_kv_heads = r.IntOr("num_kv_heads", m.num_attention_heads, 1, 1 << 14);
  m.vocab_size = r.Int("vocab_size", 1, 1 << 24);
  m.seq_length = r.Int("seq_length", 1, 1 << 24);
  m.global_batch_size = r.Int("global_batch_size", 1, 1 << 24);
  m.param_dtype = ReadDType(r, "param_dtype", DType::kBf16);
  m.grad_dtype = ReadDType(r, "grad_dtype", m.param_dtype);
  m.gated_mlp = r.BoolOr("gated_mlp", true);
  m.flash_attention = r.BoolOr("flash_attention", true);
  m.tie_embeddings = r.BoolOr("tie_embeddings", false);
  if (r.Has("optimizer")) {
    detail::FieldReader opt(r.Object("optimizer"), where + " optimizer");
    opt.RejectUnknown({"type", "zero1"});
    std::string type = opt.StringOr("type", "adam");
    Require(type == "adam", where, "optimizer.type must be \"adam\", got \"" + type + "\"");
    m.zero1 = opt.BoolOr("zero1", false);
  }
  Require(m.hidden_size % m.num_attention_heads == 0, where,
          "hidden_size must be a multiple of num_attention_heads");
  Require(m.num_attention_heads % m.num_kv_heads == 0, where,
          "num_attention_heads must be a multiple of num_kv_heads");
  return m;
}

ModelSpec LoadModelSpec(const std::string& path) {
  return ParseModelSpec(detail::ReadTextFile(path), path);
}

std::int64_t LayerMatrixParams(const ModelSpec& m) {
  const std::int64_t h = m.hidden_size, kv = m.kv_hidden(), f = m.ffn_hidden_size;
  const std::int64_t attention = 2 * h * h + 2 * h * kv;  // Q and O, K and V
  const std::int64_t mlp = (m.gated_mlp ? 3 : 2) * h * f;
  return attention + mlp;
}

std::int64_t LayerNormParams(const ModelSpec& m) { return 2 * std::int64_t{m.hidden_size}; }

std::int64_t EmbeddingParams(const ModelSpec& m) {
  return std::int64_t{m.vocab_size} * m.hidden_size;
}

std::int64_t TotalParams(const ModelSpec& m) {
  const std::int64_t layers = m.num_layers * (LayerMatrixParams(m) + LayerNormParams(m));
  const std::int64_t embeddings = EmbeddingParams(m) * (m.tie_embeddings ? 1 : 2);
  return layers + embeddings + m.hidden_size;  // + final norm
}

double LayerForwardFlopsPerSequence(const ModelSpec& m) {
  const double s = m.seq_length, h = m.hidden_size, kv = m.kv_hidden(), f = m.ffn_hidden_size;
  const double projections = 2.0 * s * (2.0 * h * h + 2.0 * h * kv);
  // Q K^T and the product with V over the full s x s score matrix (the usual MFU convention;
  // causal kernels skip part of it, which the achievable fraction absorbs).
  const double attention = 4.0 * s * s * h;
  const double mlp = 2.0 * s * h * f * (m.gated_mlp ? 3.0 : 2.0);
  return projections + attention + mlp;
}

double HeadForwardFlopsPerSequence(const ModelSpec& m) {
  return 2.0 * m.seq_length * static_cast<double>(m.hidden_size) * m.vocab_size;
}

}  // namespace mixccl::train
