// mixccl-train --debug-state DIR: what an independent implementation of the model needs to
// check the trainer (train/tests/torch_crosscheck.py does, in PyTorch). A single-process run
// writes into DIR (format in docs/training.md, "Debug state"):
//   start.ckpt       the checkpoint of the run's starting point (weights, AdamW moments, step)
//   meta.json        AdamW hyperparameters, batch shape, the tensor table, every step's loss
//                    and gradient norm
//   tokens.npy       int32 (N, G, T): the inputs of each of the N steps' G sequences
//   targets.npy      int32 (N, G, T): their targets
//   logits.npy       float32 (B, T, V): the first step's logits of its last micro-batch
//   grads.npy        float32 (n): the first step's gradient (summed over the micro-batches,
//                    before clipping), in the checkpoint's parameter order
//   params_end.npy   float32 (n): the parameters after the N steps
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mixccl/train/trainer.h"

namespace mixccl::train {

// Writes a NumPy .npy file (format 1.0, little-endian, C order) of `shape`. `descr` is the
// element type as NumPy names it ("<f4", "<i4"); `bytes` holds prod(shape) elements of it.
// Throws std::runtime_error.
void WriteNpy(const std::string& path, const char* descr, const std::vector<std::size_t>& shape,
              const void* bytes, std::size_t element_size);

class DebugStateRecorder {
 public:
  // Creates `dir` (and no parents) if needed and writes start.ckpt there. The trainer must be
  // a single process (one replica, one stage, no tensor parallelism). Throws
  // std::invalid_argument / std::runtime_error.
  DebugStateRecorder(std::string dir, Trainer& trainer);

  // Around each Trainer::Step(): Before reads the step's batch, After keeps the first step's
  // logits and gradient and every step's loss and gradient norm.
  void BeforeStep();
  void AfterStep(const StepRecord& record);
  // Writes meta.json and the arrays.
  void Finish();

 private:
  std::string dir_;
  Trainer& trainer_;
  std::uint64_t first_step_ = 0;
  std::vector<int> tokens_, targets_;  // (steps, G, T)
  std::vector<float> logits_, grads_;
  int logits_sequences_ = 0;
  std::vector<double> losses_, grad_norms_;
};

}  // namespace mixccl::train
