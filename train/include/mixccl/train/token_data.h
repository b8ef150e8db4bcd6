// Training data: a stream of token ids, and which tokens each sequence of each step reads.
//
// Token file format (little-endian, documented in docs/training.md):
//   offset  0  8 bytes  magic "MIXTOKS1"
//   offset  8  u32      version (1)
//   offset 12  u32      bytes per token (1 or 2)
//   offset 16  u32      vocabulary size (every token is below it)
//   offset 20  u32      reserved, 0
//   offset 24  u64      number of tokens
//   offset 32  tokens
// Ranks read only the sequences they train on, at their offsets in the file.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace mixccl::train {

constexpr char kTokenFileMagic[8] = {'M', 'I', 'X', 'T', 'O', 'K', 'S', '1'};
constexpr std::uint32_t kTokenFileVersion = 1;
constexpr int kTokenFileHeaderBytes = 32;

// Writes tokens (each below vocab_size) with the header above; throws std::runtime_error.
void WriteTokenFile(const std::string& path, const std::vector<int>& tokens, int vocab_size);

// The tokenizer-free default: English-like text from a small grammar, `bytes` long, the same
// for a given seed everywhere. Its bytes are the tokens (vocabulary 256).
std::string GenerateDefaultText(std::size_t bytes, std::uint64_t seed);

class TokenData {
 public:
  // Tokens held in memory (generated text, tests).
  static TokenData FromTokens(std::vector<int> tokens, int vocab_size,
                              std::string origin = "in-memory tokens");
  // A token file; checks the header and the size. Throws std::runtime_error naming the file.
  static TokenData Open(const std::string& path);
  // Any file's bytes as tokens (vocabulary 256), read at offsets like a token file.
  static TokenData OpenBytes(const std::string& path);

  std::uint64_t num_tokens() const { return num_tokens_; }
  int vocab_size() const { return vocab_size_; }
  // Reads tokens [first, first + count) into out.
  void Read(std::uint64_t first, std::size_t count, int* out);

  // Sequence `index` of the whole run (step k's sequences are k*G .. k*G+G-1 for a global
  // batch of G): inputs are T tokens and targets the same tokens shifted by one. The data hold
  // (num_tokens - 1) / T windows and sequence i uses window i modulo that, so a run longer than
  // one pass wraps around. Which rank reads a sequence never changes what it contains.
  void ReadSequence(std::uint64_t index, int T, int* inputs, int* targets);
  std::uint64_t num_windows(int T) const { return (num_tokens_ - 1) / T; }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<int> memory_;  // in-memory tokens, or empty for a file
  std::ifstream file_;
  std::uint64_t data_offset_ = 0;
  int bytes_per_token_ = 1;
  std::uint64_t num_tokens_ = 0;
  int vocab_size_ = 256;
  std::vector<unsigned char> buffer_;
};

}  // namespace mixccl::train
