#include "mixccl/train/cost_model.h"

#include <gtest/gtest.h>

#include "test_specs.h"

namespace mixccl::train {
namespace {

using testing::Cluster;
using testing::Device;

ModelSpec Llama2_7B() {
  ModelSpec m = testing::SmallModel(32, 1024);
  m.hidden_size = 4096;
  m.ffn_hidden_size = 11008;
  m.num_attention_heads = 32;
  m.num_kv_heads = 32;
  m.vocab_size = 32000;
  m.seq_length = 4096;
  return m;
}

TEST(CostModel, Llama2_7BLayerFlops) {
  const ModelSpec m = Llama2_7B();
  // Projections 2*s*(2h^2 + 2h*kv) = 549,755,813,888; scores and context 4*s^2*h =
  // 274,877,906,944; SwiGLU MLP 2*s*3hf = 1,108,101,562,368.
  EXPECT_DOUBLE_EQ(LayerForwardFlopsPerSequence(m), 1932735283200.0);
  // Equivalently 2 * s * (layer matrices) + 4 s^2 h.
  EXPECT_DOUBLE_EQ(LayerForwardFlopsPerSequence(m),
                   2.0 * 4096 * LayerMatrixParams(m) + 4.0 * 4096.0 * 4096.0 * 4096.0);
  EXPECT_DOUBLE_EQ(HeadForwardFlopsPerSequence(m), 2.0 * 4096 * 4096 * 32000);
}

TEST(CostModel, AnalyticLayerTimeWithTensorParallelism) {
  const ModelSpec m = Llama2_7B();
  const ClusterSpec c = Cluster({Device("X", 8, 400.0, 80.0, 8)});  // 200 TFLOP/s achievable
  const CostModel cost(m, c, nullptr);
  const double flops = 2 * LayerForwardFlopsPerSequence(m);  // micro-batch 2
  const PassTimes one = cost.Layer(0, 1, 2);
  EXPECT_DOUBLE_EQ(one.forward_s, flops / 200e12);
  EXPECT_DOUBLE_EQ(one.backward_s, 2 * flops / 200e12);
  // tp 4: a quarter of the FLOPs plus two ring AllReduces of s*b*h*2 bytes each way:
  // 2*(3/4)*bytes/200 GB/s + 2*3*3 us.
  const double bytes = 2.0 * 2 * 4096 * 4096;
  const double allreduce = 1.5 * bytes / 200e9 + 6 * 3e-6;
  EXPECT_DOUBLE_EQ(cost.TensorParallelAllReduce(0, 4, bytes), allreduce);
  const PassTimes four = cost.Layer(0, 4, 2);
  EXPECT_NEAR(four.forward_s, flops / 4 / 200e12 + 2 * allreduce, 1e-15);
  EXPECT_NEAR(four.backward_s, 2 * flops / 4 / 200e12 + 2 * allreduce, 1e-15);
}

TEST(CostModel, ProfileReplacesAnalyticEstimateWhereKnown) {
  const ModelSpec m = Llama2_7B();
  const ClusterSpec c = Cluster({Device("X", 8, 400.0, 80.0, 8)});
  LayerProfile profile;
  profile.Add("X", 2, {1, 0.010, 0.020});
  profile.Add("X", 2, {4, 0.034, 0.071});
  const CostModel cost(m, c, &profile);
  EXPECT_DOUBLE_EQ(cost.Layer(0, 2, 1).forward_s, 0.010);
  EXPECT_DOUBLE_EQ(cost.Layer(0, 2, 4).backward_s, 0.071);
  // Interpolated between measurements: mb 2 is a third of the way from 1 to 4.
  EXPECT_NEAR(cost.Layer(0, 2, 2).forward_s, 0.010 + (0.034 - 0.010) / 3, 1e-15);
  // Proportional beyond the largest measurement.
  EXPECT_NEAR(cost.Layer(0, 2, 8).backward_s, 0.142, 1e-15);
  // tp 1 was not measured: analytic.
  EXPECT_DOUBLE_EQ(cost.Layer(0, 1, 1).forward_s, LayerForwardFlopsPerSequence(m) / 200e12);
}

TEST(CostModel, CommunicationUsesDomainOrInterDomainLink) {
  const ModelSpec m = Llama2_7B();
  const ClusterSpec c = Cluster({Device("X", 8, 400.0, 80.0, 8), Device("Y", 8, 100, 32, 8)}, 20.0);
  const CostModel cost(m, c, nullptr);
  const double bytes = 2.0 * 4096 * 4096;  // micro-batch 1
  // Inside a host: 200 GB/s, 3 us. Between hosts: 20 GB/s, 10 us; tp 2 -> tp 4 uses 2 streams.
  EXPECT_DOUBLE_EQ(cost.PointToPoint(0, 1, 0, 1, true, 1), bytes / 200e9 + 3e-6);
  EXPECT_DOUBLE_EQ(cost.PointToPoint(0, 2, 1, 4, false, 1), bytes / 2 / 20e9 + 10e-6);
  // Data-parallel AllReduce: 4 replicas per host then a ring over 3 hosts of a quarter each.
  const double g = 1e9;
  const double expected =
      2 * 0.75 * g / 200e9 + 6 * 3e-6 + 2 * (2.0 / 3.0) * (g / 4) / 20e9 + 4 * 10e-6;
  EXPECT_NEAR(cost.DataParallelAllReduce(0, g, 4.0, 3), expected, 1e-15);
  EXPECT_DOUBLE_EQ(cost.DataParallelAllReduce(0, g, 1.0, 1), 0.0);
}

}  // namespace
}  // namespace mixccl::train
