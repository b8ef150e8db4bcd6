// AdamW, gradient clipping, the token data, checkpoints and the single-process training loop.
#include "mixccl/train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace mixccl::train {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "." + std::to_string(getpid());
}

TEST(AdamW, OneStepByHand) {
  // Step 1 with bias correction: m_hat = g, v_hat = g^2, so the step is lr * g / (|g| + eps),
  // plus lr * wd * p on decayed tensors only.
  std::vector<ParamTensor> tensors = {{"w", 0, 0, 1, true}, {"b", 1, 1, 1, false}};
  AdamWConfig c;
  c.learning_rate = 0.1f;
  c.weight_decay = 0.5f;
  AdamW opt(c, tensors, 2);
  std::vector<float> p = {2.0f, 2.0f}, g = {0.25f, -4.0f};
  opt.Step(p.data(), g.data(), 1.0f);
  EXPECT_NEAR(p[0], 2.0f - 0.1f * (1.0f + 0.5f * 2.0f), 1e-6);
  EXPECT_NEAR(p[1], 2.0f + 0.1f, 1e-6);
  EXPECT_EQ(opt.steps(), 1);
}

TEST(AdamW, ClipScale) {
  EXPECT_EQ(ClipScale(4.0, 1.0f), 0.5f);    // norm 2 -> scaled to 1
  EXPECT_EQ(ClipScale(0.25, 1.0f), 1.0f);   // norm 0.5 stays
  EXPECT_EQ(ClipScale(100.0, 0.0f), 1.0f);  // clipping off
  const float g[] = {3.0f, 4.0f};
  EXPECT_EQ(SumOfSquares(g, 2), 25.0);
}

TEST(TokenData, FileRoundTripAndSequences) {
  const std::string path = TempPath("tokens");
  std::vector<int> tokens;
  for (int i = 0; i < 50; ++i) tokens.push_back((i * 7) % 300);
  WriteTokenFile(path, tokens, 300);
  TokenData d = TokenData::Open(path);
  EXPECT_EQ(d.num_tokens(), 50u);
  EXPECT_EQ(d.vocab_size(), 300);
  const int T = 8;
  EXPECT_EQ(d.num_windows(T), 6u);  // (50 - 1) / 8
  std::vector<int> in(T), out(T);
  d.ReadSequence(7, T, in.data(), out.data());  // window 7 % 6 = 1: tokens 8..16
  for (int t = 0; t < T; ++t) {
    EXPECT_EQ(in[t], tokens[8 + t]);
    EXPECT_EQ(out[t], tokens[9 + t]);
  }
  std::remove(path.c_str());
}

TEST(TokenData, RefusesBadFiles) {
  const std::string path = TempPath("notokens");
  { std::ofstream(path) << "just some text, long enough for a header........"; }
  try {
    TokenData::Open(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              path +
                  ": not a token file (no MIXTOKS1 magic; use --text for the bytes of a "
                  "plain file)");
  }
  WriteTokenFile(path, {1, 2, 3, 4}, 256);
  { std::ofstream(path, std::ios::app) << "x"; }
  try {
    TokenData::Open(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": the header says 4 tokens but the file holds 5");
  }
  std::remove(path.c_str());
}

TEST(TokenData, DefaultTextIsDeterministic) {
  const std::string a = GenerateDefaultText(4096, 1), b = GenerateDefaultText(4096, 1);
  EXPECT_EQ(a.size(), 4096u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, GenerateDefaultText(4096, 2));
  EXPECT_EQ(a.substr(0, 4), GenerateDefaultText(8, 1).substr(0, 4));
}

TrainOptions SmallRun() {
  TrainOptions o;
  o.model.vocab_size = 256;
  o.model.seq_len = 16;
  o.model.channels = 32;
  o.model.num_heads = 4;
  o.model.num_layers = 2;
  o.global_batch = 4;
  o.micro_batches = 2;
  o.seed = 3;
  o.adamw.learning_rate = 3e-3f;
  return o;
}

TokenData TextData(std::size_t bytes = 1 << 15) {
  const std::string text = GenerateDefaultText(bytes, 1);
  return TokenData::FromTokens(std::vector<int>(text.begin(), text.end()), 256);
}

std::vector<double> Losses(Trainer& t, int steps) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(t.Step().loss);
  return losses;
}

TEST(Trainer, ResumeReproducesTheUninterruptedRunBitwise) {
  const TrainOptions o = SmallRun();
  Trainer whole(o, RankRole::SingleProcess(o), TextData(), nullptr);
  const std::vector<double> expected = Losses(whole, 6);

  const std::string path = TempPath("ckpt");
  Trainer before(o, RankRole::SingleProcess(o), TextData(), nullptr);
  std::vector<double> losses = Losses(before, 3);
  before.Save(path);
  // A fresh trainer with another seed: everything must come from the checkpoint.
  TrainOptions other = o;
  other.seed = 99;
  Trainer after(other, RankRole::SingleProcess(other), TextData(), nullptr);
  after.Resume(path);
  EXPECT_EQ(after.position().step, 3u);
  EXPECT_EQ(after.position().next_sequence, 12u);
  for (double l : Losses(after, 3)) losses.push_back(l);
  EXPECT_EQ(losses, expected);  // exact: the same operations on the same bits
  EXPECT_EQ(after.stage().params(), whole.stage().params());
  std::remove(path.c_str());
}

TEST(Trainer, CheckpointOfAnotherModelIsRefused) {
  const TrainOptions o = SmallRun();
  const std::string path = TempPath("ckpt_other");
  Trainer t(o, RankRole::SingleProcess(o), TextData(), nullptr);
  t.Save(path);
  TrainOptions wider = o;
  wider.model.channels = 64;
  Trainer u(wider, RankRole::SingleProcess(wider), TextData(), nullptr);
  try {
    u.Resume(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": checkpoint has channels 32, this run has 64");
  }
  { std::ofstream(path, std::ios::app) << "x"; }
  try {
    t.Resume(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": checkpoint has bytes after its last array");
  }
  std::remove(path.c_str());
}

TEST(Trainer, LossDecreasesOnTheDefaultText) {
  TrainOptions o = SmallRun();
  Trainer t(o, RankRole::SingleProcess(o), TextData(), nullptr);
  const std::vector<double> losses = Losses(t, 30);
  // Starts near ln(256) = 5.55 (uniform prediction) and learns the byte statistics.
  EXPECT_NEAR(losses.front(), std::log(256.0), 0.1);
  EXPECT_LT(losses.back(), losses.front() - 1.5) << "30 steps did not learn";
}

TEST(Trainer, RefusesABatchThatDoesNotSplit) {
  TrainOptions o = SmallRun();
  o.global_batch = 5;
  try {
    Trainer t(o, RankRole::SingleProcess(o), TextData(), nullptr);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "global batch 5 is not a multiple of the 2 micro-batches per step");
  }
}

}  // namespace
}  // namespace mixccl::train
