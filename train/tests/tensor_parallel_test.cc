// Tensor parallelism of GptStage in one process: two ranks (threads) that sum through a shared
// buffer hold between them exactly the whole model's weights, compute its loss, and their
// gradients are the whole model's gradients, sliced the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "mixccl/train/gpt_model.h"

namespace mixccl::train {
namespace {

// An AllReduce between two threads: each adds its buffer into a shared one, waits for the
// other, and copies the total back. Additions in rank order, so both get the same bits.
class TwoThreadSum {
 public:
  void Sum(int rank, float* data, std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    const long round = round_;
    if (arrived_ == 0) total_.assign(n, 0.0f);
    parts_[rank].assign(data, data + n);
    if (++arrived_ == 2) {
      for (std::size_t i = 0; i < n; ++i) total_[i] = parts_[0][i] + parts_[1][i];
      arrived_ = 0;
      ++round_;
      result_ = total_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return round_ != round; });
    }
    std::copy(result_.begin(), result_.end(), data);
    // Neither rank may start the next sum before both have copied this one's result.
    if (++copied_ == 2) {
      copied_ = 0;
      ++copy_round_;
      cv_.notify_all();
    } else {
      const long cr = copy_round_;
      cv_.wait(lock, [&] { return copy_round_ != cr; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0, copied_ = 0;
  long round_ = 0, copy_round_ = 0;
  std::vector<float> parts_[2], total_, result_;
};

GptConfig SmallConfig() {
  GptConfig c;
  c.vocab_size = 13;
  c.seq_len = 6;
  c.channels = 16;
  c.num_heads = 4;
  c.num_layers = 2;
  return c;
}

// Which part of a block tensor rank `index` of `tp` holds, spelled out independently of the
// model's table: (rows, cols) of the whole tensor, row blocks cut per rank or columns cut.
std::vector<float> Slice(const std::string& name, const std::vector<float>& whole, int C, int index,
                         int tp) {
  const std::string n = name.substr(name.find('.') + 1);
  if (n == "qkv_w" || n == "qkv_b" || n == "fc_w" || n == "fc_b") {
    const int parts = n.compare(0, 3, "qkv") == 0 ? 3 : 1;
    const size_t cols = n.back() == 'w' ? C : 1;
    const size_t part_rows = whole.size() / cols / parts, mine = part_rows / tp;
    std::vector<float> out;
    for (int p = 0; p < parts; ++p) {
      const size_t first = p * part_rows + index * mine;
      out.insert(out.end(), whole.begin() + first * cols, whole.begin() + (first + mine) * cols);
    }
    return out;
  }
  if (n == "proj_w" || n == "fcproj_w") {
    const size_t rows = C, cols = whole.size() / rows, mine = cols / tp;
    std::vector<float> out;
    for (size_t r = 0; r < rows; ++r) {
      out.insert(out.end(), whole.begin() + r * cols + index * mine,
                 whole.begin() + r * cols + (index + 1) * mine);
    }
    return out;
  }
  return whole;  // replicated
}

std::vector<float> Part(const GptStage& s, const std::vector<float>& flat,
                        const std::string& name) {
  const ParamTensor* t = s.FindTensor(name);
  return std::vector<float>(flat.begin() + t->offset, flat.begin() + t->offset + t->size);
}

TEST(TensorParallel, TwoRanksEqualTheWholeModel) {
  const GptConfig c = SmallConfig();
  const int B = 2, N = B * c.seq_len;
  std::vector<int> tokens(N), targets(N);
  for (int i = 0; i < N; ++i) {
    tokens[i] = (7 * i + 3) % c.vocab_size;
    targets[i] = (5 * i + 1) % c.vocab_size;
  }
  GptStage whole(c, StageRange::Whole(c));
  whole.Init(3);
  MicroBatchState sw;
  const double lw = whole.Forward(sw, B, tokens.data(), targets.data(), nullptr);
  whole.Backward(sw, nullptr, 0.1f);

  TwoThreadSum sum;
  std::vector<GptStage> ranks;
  for (int i = 0; i < 2; ++i) {
    ranks.emplace_back(c, StageRange::Whole(c), TensorSplit{2, i});
    ranks.back().Init(3);
  }
  for (int i = 0; i < 2; ++i) {
    ranks[i].SetTensorParallelSum([&sum, i](float* d, std::size_t n) { sum.Sum(i, d, n); });
  }
  double loss[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      MicroBatchState s;
      loss[i] = ranks[i].Forward(s, B, tokens.data(), targets.data(), nullptr);
      ranks[i].Backward(s, nullptr, 0.1f);
    });
  }
  for (auto& t : threads) t.join();

  EXPECT_NEAR(loss[0], lw, 1e-6 * lw);
  EXPECT_EQ(loss[0], loss[1]);
  double max_rel = 0.0;
  for (const ParamTensor& t : whole.tensors()) {
    const std::vector<float> wp = Part(whole, whole.params(), t.name);
    const std::vector<float> wg = Part(whole, whole.grads(), t.name);
    double norm = 0.0;
    for (float g : wg) norm += double(g) * g;
    norm = std::sqrt(norm / wg.size()) + 1e-12;
    for (int i = 0; i < 2; ++i) {
      const ParamTensor* mine = ranks[i].FindTensor(t.name);
      ASSERT_NE(mine, nullptr) << t.name;
      EXPECT_EQ(mine->tp_split, Slice(t.name, wp, c.channels, i, 2).size() != wp.size()) << t.name;
      EXPECT_EQ(Part(ranks[i], ranks[i].params(), t.name), Slice(t.name, wp, c.channels, i, 2))
          << t.name << " rank " << i;
      const std::vector<float> expect = Slice(t.name, wg, c.channels, i, 2);
      const std::vector<float> got = Part(ranks[i], ranks[i].grads(), t.name);
      ASSERT_EQ(got.size(), expect.size()) << t.name;
      for (size_t k = 0; k < got.size(); ++k) {
        max_rel = std::max(max_rel, std::fabs(got[k] - expect[k]) / norm);
      }
    }
  }
  // Only the order of the partial sums differs from the whole model: rounding, relative to
  // each tensor's gradient size.
  EXPECT_LT(max_rel, 1e-4);
  std::printf("  largest gradient difference %.2e (relative to the tensor's rms)\n", max_rel);
}

TEST(TensorParallel, RefusesASplitThatDoesNotDivideTheHeads) {
  const GptConfig c = SmallConfig();
  try {
    GptStage s(c, StageRange::Whole(c), TensorSplit{3, 0});
    FAIL() << "accepted tp 3 for 4 heads";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "tensor parallelism 3 must divide the 4 heads (rank 0)");
  }
}

TEST(TensorParallel, NeedsItsSumBeforeForward) {
  const GptConfig c = SmallConfig();
  GptStage s(c, StageRange::Whole(c), TensorSplit{2, 0});
  s.Init(1);
  std::vector<int> tokens(c.seq_len, 1);
  MicroBatchState st;
  try {
    s.Forward(st, 1, tokens.data(), tokens.data(), nullptr);
    FAIL() << "ran a split block without a sum";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "a tensor-parallel stage needs SetTensorParallelSum");
  }
}

}  // namespace
}  // namespace mixccl::train
