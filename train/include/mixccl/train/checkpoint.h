// Checkpoints: one file per pipeline stage holding its weights, the AdamW state and the data
// position, behind a header that says which model and which part of it the file holds.
//
// Format (little-endian, documented in docs/training.md):
//   offset  0  8 bytes  magic "MIXCKPT1"
//   offset  8  u32      version (1)
//   offset 12  u32      header bytes (96)
//   offset 16  9 x i32  vocab_size, seq_len, channels, num_heads, num_layers,
//                       first_layer, last_layer, embedding (0/1), head (0/1)
//   offset 52  u32      reserved, 0
//   offset 56  u64      optimizer steps taken (the next step is this + 1)
//   offset 64  u64      data position: index of the next sequence of the run
//   offset 72  u64      AdamW's step count (bias correction)
//   offset 80  u64      parameter count n
//   offset 88  u64      reserved, 0
//   offset 96  f32[n] parameters, f32[n] first moments, f32[n] second moments
#pragma once

#include <cstdint>
#include <string>

#include "mixccl/train/adamw.h"
#include "mixccl/train/gpt_model.h"

namespace mixccl::train {

struct TrainPosition {
  std::uint64_t step = 0;           // optimizer steps taken
  std::uint64_t next_sequence = 0;  // data position
};

// Writes to `path`.tmp and renames, so a crash never leaves a half-written checkpoint behind.
// Throws std::runtime_error.
void SaveCheckpoint(const std::string& path, const GptStage& stage, AdamW& optimizer,
                    const TrainPosition& position);

// Restores weights and optimizer state into a stage built for the same model part. Throws
// std::runtime_error naming the file and the first field that does not match.
TrainPosition LoadCheckpoint(const std::string& path, GptStage& stage, AdamW& optimizer);

}  // namespace mixccl::train
