// Memory of LLaMA 2 7B and 13B stages against hand calculations.
//
// Conventions (docs/planner.md): s = sequence length, b = micro-batch, h = hidden, f = FFN,
// kv = K/V width, V = vocabulary, t = tensor-parallel size, e = 2 bytes (bf16).
//   layer matrices  = 2h^2 (Q, O) + 2h*kv (K, V) + 3hf (gate, up, down), split over t
//   layer norms     = 2h, replicated
//   embedding, head = V*h each, split over t; final norm h
//   weights e, gradients e (bf16), Adam 12 bytes (fp32 master, m, v) per parameter -> 16 B,
//   Adam states divided by the data-parallel degree under ZeRO-1
//   activations per layer and micro-batch = e*s*b*(4h + (2h + 2kv + 4f)/t); a recomputed layer
//   keeps e*s*b*h; one layer's full set more while recomputing; the head keeps
//   e*s*b*2h + (e+4)*s*b*V/t for the one micro-batch the last stage has in flight.
#include "mixccl/train/memory_model.h"

#include <gtest/gtest.h>

namespace mixccl::train {
namespace {

ModelSpec Llama2_7B() {
  ModelSpec m;
  m.name = "llama2-7b";
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.ffn_hidden_size = 11008;
  m.num_attention_heads = 32;
  m.num_kv_heads = 32;
  m.vocab_size = 32000;
  m.seq_length = 4096;
  m.global_batch_size = 1024;
  return m;
}

ModelSpec Llama2_13B() {
  ModelSpec m = Llama2_7B();
  m.name = "llama2-13b";
  m.num_layers = 40;
  m.hidden_size = 5120;
  m.ffn_hidden_size = 13824;
  m.num_attention_heads = 40;
  m.num_kv_heads = 40;
  return m;
}

TEST(MemoryModel, Llama2_7BParameterCount) {
  const ModelSpec m = Llama2_7B();
  // 2*4096^2 + 2*4096*4096 + 3*4096*11008 = 33,554,432 + 33,554,432 + 135,266,304
  EXPECT_EQ(LayerMatrixParams(m), 202375168);
  EXPECT_EQ(LayerNormParams(m), 8192);
  // 32 * 202,383,360 + 2 * 32000*4096 + 4096 = 6,476,267,520 + 262,144,000 + 4,096
  EXPECT_EQ(TotalParams(m), 6738415616);  // the published 6.74B
}

TEST(MemoryModel, Llama2_13BParameterCount) {
  const ModelSpec m = Llama2_13B();
  // 4*5120^2 + 3*5120*13824 = 104,857,600 + 212,336,640
  EXPECT_EQ(LayerMatrixParams(m), 317194240);
  // 40 * (317,194,240 + 10,240) + 2 * 32000*5120 + 5120 = 12,688,179,200 + 327,680,000 + 5,120
  EXPECT_EQ(TotalParams(m), 13015864320);  // the published 13.0B
}

TEST(MemoryModel, Llama2_7BWholeModelOnOneDevice) {
  const ModelSpec m = Llama2_7B();
  const MemoryModel mm(m);
  StageMemoryQuery q;
  q.num_layers = 32;
  q.has_embedding = true;
  q.has_head = true;
  q.tp = 1;
  q.micro_batch = 1;
  q.in_flight = 1;
  const MemoryBreakdown b = mm.Stage(q, 0.0);
  // 6,738,415,616 parameters: 2 B weights, 2 B gradients, 12 B Adam = 16 B per parameter.
  EXPECT_DOUBLE_EQ(b.weights_bytes, 13476831232.0);
  EXPECT_DOUBLE_EQ(b.gradient_bytes, 13476831232.0);
  EXPECT_DOUBLE_EQ(b.optimizer_bytes, 80860987392.0);
  EXPECT_DOUBLE_EQ(b.weights_bytes + b.gradient_bytes + b.optimizer_bytes, 16.0 * 6738415616.0);
  // Per layer: 2*4096*1*(4*4096 + 2*4096 + 2*4096 + 4*11008) = 8192 * 76,800 = 629,145,600.
  EXPECT_DOUBLE_EQ(mm.LayerActivationBytes(1, 1), 629145600.0);
  // Head: 2*4096*2*4096 + 6*4096*32000 = 67,108,864 + 786,432,000 = 853,540,864.
  EXPECT_DOUBLE_EQ(mm.HeadActivationBytes(1, 1), 853540864.0);
  // 32 * 629,145,600 + 853,540,864 = 20,986,200,064.
  EXPECT_DOUBLE_EQ(b.activation_bytes, 20986200064.0);
  // 26,953,662,464 + 80,860,987,392 + 20,986,200,064 = 128,800,849,920 B = 119.95 GiB.
  EXPECT_DOUBLE_EQ(b.total_bytes(), 128800849920.0);
}

TEST(MemoryModel, Llama2_7BFirstStageTensorParallelZero1) {
  const ModelSpec base = Llama2_7B();
  ModelSpec m = base;
  m.zero1 = true;
  const MemoryModel mm(m);
  // Stage 0 of 4: layers 0..7 and the embedding, tp 2, micro-batch 2, 4 micro-batches in
  // flight, Adam sharded over 8 replicas.
  StageMemoryQuery q;
  q.num_layers = 8;
  q.has_embedding = true;
  q.tp = 2;
  q.micro_batch = 2;
  q.in_flight = 4;
  q.optimizer_shards = 8;
  // 8 * (202,375,168/2 + 8,192) + (32000/2)*4096 = 809,566,208 + 65,536,000
  EXPECT_DOUBLE_EQ(mm.StageParams(q), 875102208.0);
  const MemoryBreakdown b = mm.Stage(q, 0.0);
  EXPECT_DOUBLE_EQ(b.weights_bytes, 1750204416.0);
  EXPECT_DOUBLE_EQ(b.gradient_bytes, 1750204416.0);
  EXPECT_DOUBLE_EQ(b.optimizer_bytes, 12.0 * 875102208.0 / 8.0);  // 1,312,653,312
  // Per layer: 2*4096*2*(4*4096 + (2*4096 + 2*4096 + 4*11008)/2) = 16,384 * 46,592
  EXPECT_DOUBLE_EQ(mm.LayerActivationBytes(2, 2), 763363328.0);
  // 8 layers * 4 in flight * 763,363,328
  EXPECT_DOUBLE_EQ(b.activation_bytes, 24427626496.0);
  EXPECT_DOUBLE_EQ(b.total_bytes(), 29240688640.0);
  // The same stage without ZeRO-1 keeps all 12 bytes of Adam state per parameter.
  const MemoryModel plain(base);
  EXPECT_DOUBLE_EQ(plain.Stage(q, 0.0).optimizer_bytes, 10501226496.0);
}

TEST(MemoryModel, Llama2_7BLastStageWithRecomputation) {
  const ModelSpec m = Llama2_7B();
  const MemoryModel mm(m);
  StageMemoryQuery q;
  q.num_layers = 8;
  q.recomputed_layers = 3;
  q.has_head = true;
  q.tp = 1;
  q.micro_batch = 1;
  q.in_flight = 1;
  // 5 full layers (5 * 629,145,600 = 3,145,728,000) + 3 layer inputs (3 * 2*4096*4096 =
  // 100,663,296) + one layer rebuilt during its backward (629,145,600) + the head
  // (853,540,864) = 4,729,077,760.
  EXPECT_DOUBLE_EQ(mm.RecomputedLayerActivationBytes(1), 33554432.0);
  EXPECT_DOUBLE_EQ(mm.Stage(q, 0.0).activation_bytes, 4729077760.0);
  // 8 layers + head + final norm: 8 * 202,383,360 + 131,072,000 + 4,096.
  EXPECT_DOUBLE_EQ(mm.StageParams(q), 1750142976.0);
}

TEST(MemoryModel, Llama2_13BFirstStageOfFour) {
  ModelSpec m = Llama2_13B();
  m.zero1 = true;
  const MemoryModel mm(m);
  StageMemoryQuery q;
  q.num_layers = 10;
  q.has_embedding = true;
  q.tp = 2;
  q.micro_batch = 1;
  q.in_flight = 4;
  q.optimizer_shards = 16;
  // 10 * (317,194,240/2 + 10,240) + (32000/2)*5120 = 1,586,073,600 + 81,920,000
  EXPECT_DOUBLE_EQ(mm.StageParams(q), 1667993600.0);
  const MemoryBreakdown b = mm.Stage(q, 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(b.weights_bytes, 3335987200.0);
  EXPECT_DOUBLE_EQ(b.gradient_bytes, 3335987200.0);
  EXPECT_DOUBLE_EQ(b.optimizer_bytes, 1250995200.0);  // 12 * 1,667,993,600 / 16
  // Per layer: 2*4096*(4*5120 + (2*5120 + 2*5120 + 4*13824)/2) = 8192 * 58,368
  EXPECT_DOUBLE_EQ(mm.LayerActivationBytes(2, 1), 478150656.0);
  EXPECT_DOUBLE_EQ(b.activation_bytes, 19126026240.0);  // 10 layers * 4 in flight
  // 6,671,974,400 + 1,250,995,200 + 19,126,026,240 + 2 GiB reserve.
  EXPECT_DOUBLE_EQ(b.total_bytes(), 27048995840.0 + 2147483648.0);
}

TEST(MemoryModel, Llama2_13BWholeModelNeeds16BytesPerParameter) {
  const ModelSpec m = Llama2_13B();
  const MemoryModel mm(m);
  StageMemoryQuery q;
  q.num_layers = 40;
  q.has_embedding = true;
  q.has_head = true;
  const MemoryBreakdown b = mm.Stage(q, 0.0);
  EXPECT_DOUBLE_EQ(b.weights_bytes + b.gradient_bytes + b.optimizer_bytes,
                   16.0 * 13015864320.0);  // 208,253,829,120 B = 193.95 GiB
}

TEST(MemoryModel, GroupedQueryAttentionAndTiedEmbeddings) {
  ModelSpec m = Llama2_7B();
  m.num_kv_heads = 8;  // kv = 8 * 128 = 1024
  m.tie_embeddings = true;
  // 2*4096^2 + 2*4096*1024 + 3*4096*11008
  EXPECT_EQ(LayerMatrixParams(m), 33554432 + 8388608 + 135266304);
  const MemoryModel mm(m);
  StageMemoryQuery both;
  both.num_layers = 1;
  both.has_embedding = true;
  both.has_head = true;
  StageMemoryQuery head_only = both;
  head_only.has_embedding = false;
  // On one stage the tied head reuses the embedding; on the last stage alone it needs a copy.
  EXPECT_DOUBLE_EQ(mm.StageParams(both), 177209344.0 + 8192 + 131072000.0 + 4096);
  EXPECT_DOUBLE_EQ(mm.StageParams(head_only), 177209344.0 + 8192 + 131072000.0 + 4096);
  StageMemoryQuery embedding_only = both;
  embedding_only.has_head = false;
  EXPECT_DOUBLE_EQ(mm.StageParams(embedding_only), 177209344.0 + 8192 + 131072000.0);
}

TEST(MemoryModel, GreedyRecomputationIsTheSmallestThatFits) {
  const ModelSpec m = Llama2_7B();
  const MemoryModel mm(m);
  StageMemoryQuery q;
  q.num_layers = 8;
  q.tp = 1;
  q.micro_batch = 1;
  q.in_flight = 4;
  const double reserved = 1.0 * (1 << 30);
  const double none = mm.Stage(q, reserved).total_bytes();
  // Fits as is: no recomputation.
  EXPECT_EQ(mm.MinRecomputedLayers(q, reserved, none), 0);
  // Slightly less room: the answer r fits and r - 1 does not.
  const double capacity = none - 5.0 * mm.LayerActivationBytes(1, 1);
  const int r = mm.MinRecomputedLayers(q, reserved, capacity);
  ASSERT_GT(r, 0);
  StageMemoryQuery at = q;
  at.recomputed_layers = r;
  EXPECT_LE(mm.Stage(at, reserved).total_bytes(), capacity);
  at.recomputed_layers = r - 1;
  EXPECT_GT(mm.Stage(at, reserved).total_bytes(), capacity);
  // Below the footprint with every layer recomputed: does not fit at all.
  at.recomputed_layers = 8;
  EXPECT_EQ(mm.MinRecomputedLayers(q, reserved, mm.Stage(at, reserved).total_bytes() - 1.0), -1);
}

}  // namespace
}  // namespace mixccl::train
