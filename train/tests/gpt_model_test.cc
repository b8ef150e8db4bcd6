// Gradient checks of every layer of the trainer's model against finite differences, and the
// identities the distributed trainer relies on (recomputation and stage splits change nothing).
#include "mixccl/train/gpt_model.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "grad_check.h"

namespace mixccl::train {
namespace {

using testing::CheckGradient;
using testing::Dot;
using testing::RandomVector;

// Measured errors of the checks below are 8e-6 .. 3.2e-4 (printed by each test); a gradient off
// by 1% gives about 1e-2 (GradCheck.DetectsAOnePercentError), so 2e-3 separates the two.
constexpr double kTol = 2e-3;

void Expect(const testing::GradCheckResult& r, const char* what) {
  EXPECT_LT(r.rel_error, kTol) << what << " (" << r.checked << " entries, |numeric| "
                               << r.numeric_norm << ")";
  EXPECT_GT(r.numeric_norm, 0.0) << what << ": the check saw no gradient at all";
  std::printf("  %-28s rel error %.2e over %d entries\n", what, r.rel_error, r.checked);
}

TEST(GradCheck, DetectsAOnePercentError) {
  // The tolerance must be tight enough to catch a slightly wrong gradient: a GELU whose
  // analytic gradient is scaled by 1.01 fails it.
  const int n = 64;
  std::vector<float> x = RandomVector(n, 1), r = RandomVector(n, 2), out(n), dx(n, 0.0f);
  GeluBackward(dx.data(), x.data(), r.data(), n);
  for (float& d : dx) d *= 1.01f;
  auto f = [&] {
    GeluForward(out.data(), x.data(), n);
    return Dot(r, out);
  };
  EXPECT_GT(CheckGradient(x.data(), n, dx.data(), f).rel_error, 4 * kTol);
}

TEST(GradCheck, Encoder) {
  const int B = 2, T = 5, C = 8, V = 11;
  std::vector<int> tokens = {3, 0, 10, 3, 7, 1, 1, 9, 4, 2};
  std::vector<float> wte = RandomVector(V * C, 1), wpe = RandomVector(T * C, 2);
  std::vector<float> r = RandomVector(B * T * C, 3), out(B * T * C);
  std::vector<float> dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  EncoderBackward(dwte.data(), dwpe.data(), r.data(), tokens.data(), B, T, C);
  auto f = [&] {
    EncoderForward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return Dot(r, out);
  };
  Expect(CheckGradient(wte.data(), wte.size(), dwte.data(), f, 1000), "encoder d wte");
  Expect(CheckGradient(wpe.data(), wpe.size(), dwpe.data(), f, 1000), "encoder d wpe");
}

TEST(GradCheck, LayerNorm) {
  const int N = 6, C = 16;
  std::vector<float> x = RandomVector(N * C, 1), w = RandomVector(C, 2), b = RandomVector(C, 3);
  std::vector<float> r = RandomVector(N * C, 4), out(N * C), mean(N), rstd(N);
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  LayerNormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  LayerNormBackward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(),
                    rstd.data(), N, C);
  auto f = [&] {
    LayerNormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    return Dot(r, out);
  };
  Expect(CheckGradient(x.data(), x.size(), dx.data(), f, 1000), "layernorm d input");
  Expect(CheckGradient(w.data(), w.size(), dw.data(), f), "layernorm d weight");
  Expect(CheckGradient(b.data(), b.size(), db.data(), f), "layernorm d bias");
}

TEST(GradCheck, Matmul) {
  const int N = 7, C = 12, OC = 20;
  std::vector<float> x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2),
                     b = RandomVector(OC, 3);
  std::vector<float> r = RandomVector(N * OC, 4), out(N * OC);
  std::vector<float> dx(N * C, 0.0f), dw(OC * C, 0.0f), db(OC, 0.0f);
  MatmulBackward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, C, OC);
  auto f = [&] {
    MatmulForward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
    return Dot(r, out);
  };
  Expect(CheckGradient(x.data(), x.size(), dx.data(), f, 1000), "matmul d input");
  Expect(CheckGradient(w.data(), w.size(), dw.data(), f, 1000), "matmul d weight");
  Expect(CheckGradient(b.data(), b.size(), db.data(), f), "matmul d bias");
}

TEST(GradCheck, CausalAttention) {
  const int B = 2, T = 6, C = 8, NH = 2;
  std::vector<float> qkv = RandomVector(B * T * 3 * C, 1);
  std::vector<float> r = RandomVector(B * T * C, 2), out(B * T * C), att(B * NH * T * T);
  std::vector<float> dqkv(qkv.size(), 0.0f);
  AttentionForward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  AttentionBackward(dqkv.data(), r.data(), qkv.data(), att.data(), B, T, C, NH);
  auto f = [&] {
    AttentionForward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    return Dot(r, out);
  };
  Expect(CheckGradient(qkv.data(), qkv.size(), dqkv.data(), f, 1000), "attention d qkv");
}

TEST(GradCheck, AttentionIsCausal) {
  // Changing the last position's K and V must not change any earlier output.
  const int B = 1, T = 4, C = 4, NH = 2;
  std::vector<float> qkv = RandomVector(B * T * 3 * C, 1), out(T * C), out2(T * C), att(NH * T * T);
  AttentionForward(out.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int i = C; i < 3 * C; ++i) qkv[(T - 1) * 3 * C + i] += 1.0f;
  AttentionForward(out2.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int i = 0; i < (T - 1) * C; ++i) EXPECT_EQ(out[i], out2[i]) << i;
}

TEST(GradCheck, Gelu) {
  const int n = 200;
  std::vector<float> x = RandomVector(n, 1, 2.0f), r = RandomVector(n, 2), out(n), dx(n, 0.0f);
  GeluBackward(dx.data(), x.data(), r.data(), n);
  auto f = [&] {
    GeluForward(out.data(), x.data(), n);
    return Dot(r, out);
  };
  Expect(CheckGradient(x.data(), n, dx.data(), f, 1000), "gelu d input");
}

TEST(GradCheck, CrossEntropy) {
  const int N = 5, V = 13;
  std::vector<float> logits = RandomVector(N * V, 1, 2.0f), probs(N * V), losses(N);
  std::vector<int> targets = {0, 12, 5, 5, 7};
  const float dloss = 0.3f;
  std::vector<float> dlogits(N * V, 0.0f);
  CrossEntropyForward(probs.data(), losses.data(), logits.data(), targets.data(), N, V);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), dloss, N, V);
  auto f = [&] {
    return dloss *
           CrossEntropyForward(probs.data(), losses.data(), logits.data(), targets.data(), N, V);
  };
  Expect(CheckGradient(logits.data(), logits.size(), dlogits.data(), f, 1000),
         "cross-entropy d logits");
}

// A model small enough for finite differences over every tensor.
GptConfig TinyConfig() {
  GptConfig c;
  c.vocab_size = 11;
  c.seq_len = 5;
  c.channels = 8;
  c.num_heads = 2;
  c.num_layers = 2;
  return c;
}

struct TinyBatch {
  int B = 2;
  std::vector<int> tokens = {3, 0, 10, 3, 7, 1, 1, 9, 4, 2};
  std::vector<int> targets = {0, 10, 3, 7, 1, 1, 9, 4, 2, 6};
};

TEST(GradCheck, WholeModelEveryTensor) {
  const GptConfig c = TinyConfig();
  GptStage model(c, StageRange::Whole(c));
  // Larger, random weights than GPT-2's 0.02 (and non-zero biases) so that every path
  // contributes a visible gradient. Independent noise keeps each layernorm's input spread out:
  // with nearly equal channels its 1/std gets large and h = 1e-2 is no longer a small step.
  model.Init(7);
  const std::vector<float> noise = RandomVector(model.params().size(), 8, 0.2f);
  for (size_t i = 0; i < noise.size(); ++i) model.params()[i] += noise[i];
  TinyBatch batch;
  const float dloss = 1.0f / (batch.B * c.seq_len);
  MicroBatchState state;
  model.ZeroGrads();
  model.Forward(state, batch.B, batch.tokens.data(), batch.targets.data(), nullptr);
  model.Backward(state, nullptr, dloss);
  const std::vector<float> grads = model.grads();
  auto f = [&] {
    MicroBatchState s;
    return dloss * model.Forward(s, batch.B, batch.tokens.data(), batch.targets.data(), nullptr);
  };
  for (const ParamTensor& t : model.tensors()) {
    Expect(CheckGradient(model.params().data() + t.offset, t.size, grads.data() + t.offset, f),
           t.name.c_str());
  }
}

TEST(GradCheck, StageInputGradient) {
  // A middle stage (no embedding, no head) passes the gradient of its input upstream.
  const GptConfig c = TinyConfig();
  GptStage stage(c, {1, 2, false, false, 0});
  stage.Init(3);
  const int B = 2, N = B * c.seq_len * c.channels;
  std::vector<float> x = RandomVector(N, 1), r = RandomVector(N, 2);
  MicroBatchState state;
  stage.Forward(state, B, nullptr, nullptr, x.data());
  stage.Backward(state, r.data(), 0.0f);
  const std::vector<float> dx = state.dinput;
  auto f = [&] {
    MicroBatchState s;
    stage.Forward(s, B, nullptr, nullptr, x.data());
    return Dot(r, s.x.back());
  };
  Expect(CheckGradient(x.data(), x.size(), dx.data(), f, 1000), "stage d input");
}

TEST(GptStage, RecomputationChangesNothing) {
  const GptConfig c = TinyConfig();
  GptStage plain(c, StageRange::Whole(c));
  StageRange r = StageRange::Whole(c);
  r.recompute = 2;
  GptStage recomputing(c, r);
  plain.Init(5);
  recomputing.Init(5);
  TinyBatch batch;
  MicroBatchState s1, s2;
  const double l1 = plain.Forward(s1, batch.B, batch.tokens.data(), batch.targets.data(), nullptr);
  const double l2 =
      recomputing.Forward(s2, batch.B, batch.tokens.data(), batch.targets.data(), nullptr);
  EXPECT_EQ(l1, l2);
  EXPECT_TRUE(s2.blocks[0].qkv.empty()) << "a recomputed block must not keep its activations";
  plain.Backward(s1, nullptr, 0.1f);
  recomputing.Backward(s2, nullptr, 0.1f);
  EXPECT_EQ(plain.grads(), recomputing.grads());
}

TEST(GptStage, TwoStagesEqualTheWholeModel) {
  const GptConfig c = TinyConfig();
  GptStage whole(c, StageRange::Whole(c));
  GptStage first(c, {0, 1, true, false, 0});
  GptStage last(c, {1, 2, false, true, 0});
  whole.Init(9);
  first.Init(9);
  last.Init(9);
  TinyBatch batch;
  MicroBatchState sw, s0, s1;
  const double lw = whole.Forward(sw, batch.B, batch.tokens.data(), batch.targets.data(), nullptr);
  first.Forward(s0, batch.B, batch.tokens.data(), nullptr, nullptr);
  const double ll = last.Forward(s1, batch.B, nullptr, batch.targets.data(), s0.x.back().data());
  EXPECT_EQ(lw, ll);
  whole.Backward(sw, nullptr, 0.1f);
  last.Backward(s1, nullptr, 0.1f);
  first.Backward(s0, s1.dinput.data(), 0.1f);
  // The stages' flat arrays are the whole model's, cut in two.
  std::vector<float> joined = first.grads();
  joined.insert(joined.end(), last.grads().begin(), last.grads().end());
  EXPECT_EQ(whole.grads(), joined);
  std::vector<float> joined_params = first.params();
  joined_params.insert(joined_params.end(), last.params().begin(), last.params().end());
  EXPECT_EQ(whole.params(), joined_params);
}

TEST(GptStage, MicroBatchesAccumulate) {
  // Two micro-batches of one sequence each give the gradient of one batch of two (up to
  // rounding: the sums run in another order).
  const GptConfig c = TinyConfig();
  GptStage model(c, StageRange::Whole(c));
  model.Init(11);
  TinyBatch batch;
  MicroBatchState s;
  model.Forward(s, 2, batch.tokens.data(), batch.targets.data(), nullptr);
  model.Backward(s, nullptr, 0.1f);
  const std::vector<float> together = model.grads();
  model.ZeroGrads();
  const int T = c.seq_len;
  for (int b = 0; b < 2; ++b) {
    model.Forward(s, 1, batch.tokens.data() + b * T, batch.targets.data() + b * T, nullptr);
    model.Backward(s, nullptr, 0.1f);
  }
  for (size_t i = 0; i < together.size(); ++i) {
    EXPECT_NEAR(model.grads()[i], together[i], 1e-6 + 1e-5 * std::fabs(together[i])) << i;
  }
}

TEST(GptStage, InitDependsOnlyOnTheSeed) {
  const GptConfig c = TinyConfig();
  GptStage a(c, StageRange::Whole(c)), b(c, StageRange::Whole(c)), other(c, StageRange::Whole(c));
  a.Init(1);
  b.Init(1);
  other.Init(2);
  EXPECT_EQ(a.params(), b.params());
  EXPECT_NE(a.params(), other.params());
  EXPECT_EQ(a.params()[a.FindTensor("block1.ln1_w")->offset], 1.0f);
  EXPECT_EQ(a.params()[a.FindTensor("block0.qkv_b")->offset], 0.0f);
}

TEST(GptStage, RefusesBadConfigsAndRanges) {
  GptConfig c = TinyConfig();
  c.num_heads = 3;
  try {
    GptStage s(c, StageRange::Whole(c));
    FAIL() << "accepted 3 heads for 8 channels";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "model config: num_heads must divide channels (8)");
  }
  c = TinyConfig();
  try {
    GptStage s(c, {1, 3, false, true, 0});
    FAIL() << "accepted layers beyond the model";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "stage layers [1, 3) are not within the 2 layers of the model");
  }
  try {
    GptStage s(c, {0, 1, true, false, 2});
    FAIL() << "accepted recomputing more layers than the stage holds";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "stage recomputes 2 layers but holds 1");
  }
}

}  // namespace
}  // namespace mixccl::train
