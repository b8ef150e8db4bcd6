#include "mixccl/train/token_data.h"

#include <cstring>
#include <stdexcept>

#include "mixccl/train/rng.h"

namespace mixccl::train {

namespace {

void PutU32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void PutU64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
std::uint32_t GetU32(const unsigned char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return v;
}
std::uint64_t GetU64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

void WriteTokenFile(const std::string& path, const std::vector<int>& tokens, int vocab_size) {
  if (vocab_size < 1 || vocab_size > 65536) {
    throw std::runtime_error(path + ": vocabulary size " + std::to_string(vocab_size) +
                             " is not in [1, 65536]");
  }
  const int width = vocab_size <= 256 ? 1 : 2;
  std::vector<unsigned char> out(kTokenFileHeaderBytes + tokens.size() * width, 0);
  std::memcpy(out.data(), kTokenFileMagic, 8);
  PutU32(&out[8], kTokenFileVersion);
  PutU32(&out[12], width);
  PutU32(&out[16], vocab_size);
  PutU64(&out[24], tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab_size) {
      throw std::runtime_error(path + ": token " + std::to_string(i) + " (" +
                               std::to_string(tokens[i]) + ") is outside the vocabulary");
    }
    unsigned char* p = &out[kTokenFileHeaderBytes + i * width];
    p[0] = static_cast<unsigned char>(tokens[i]);
    if (width == 2) p[1] = static_cast<unsigned char>(tokens[i] >> 8);
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  if (!f) throw std::runtime_error(path + ": cannot write the token file");
}

std::string GenerateDefaultText(std::size_t bytes, std::uint64_t seed) {
  // A tiny grammar: sentences of a subject, a verb, an object and sometimes a place. The text
  // has structure at several scales (spelling, agreement, punctuation) so the loss keeps
  // falling for a while, and needs no file in the repository.
  static const char* const kSubjects[] = {
      "the cat",      "a dog",    "the old sailor", "my sister", "the engineer",
      "a small bird", "the king", "our teacher",    "the river", "a stranger"};
  static const char* const kVerbs[] = {"sees",    "finds",  "carries", "paints",  "remembers",
                                       "follows", "builds", "loves",   "watches", "opens"};
  static const char* const kObjects[] = {
      "the door", "a red apple",     "the long road", "an empty boat", "the garden",
      "a letter", "the bright moon", "a wooden box",  "the city",      "a quiet song"};
  static const char* const kPlaces[] = {"in the morning", "near the sea", "after the rain",
                                        "under the bridge", "at night"};
  Rng rng(seed);
  std::string text;
  text.reserve(bytes + 64);
  bool start = true;
  while (text.size() < bytes) {
    std::string s = kSubjects[rng.Below(10)];
    if (start) s[0] = static_cast<char>(s[0] - 'a' + 'A');
    s += std::string(" ") + kVerbs[rng.Below(10)] + " " + kObjects[rng.Below(10)];
    if (rng.Below(3) == 0) s += std::string(" ") + kPlaces[rng.Below(5)];
    const std::uint64_t end = rng.Below(6);
    s += end == 0 ? ", and " : end == 1 ? "!\n" : ".\n";
    start = end != 0;
    text += s;
  }
  text.resize(bytes);
  return text;
}

TokenData TokenData::FromTokens(std::vector<int> tokens, int vocab_size, std::string origin) {
  TokenData d;
  d.origin_ = std::move(origin);
  d.num_tokens_ = tokens.size();
  d.vocab_size_ = vocab_size;
  d.memory_ = std::move(tokens);
  return d;
}

TokenData TokenData::Open(const std::string& path) {
  TokenData d;
  d.origin_ = path;
  d.file_.open(path, std::ios::binary);
  if (!d.file_) throw std::runtime_error(path + ": cannot open the token file");
  unsigned char h[kTokenFileHeaderBytes];
  if (!d.file_.read(reinterpret_cast<char*>(h), sizeof h)) {
    throw std::runtime_error(path + ": shorter than the 32-byte token file header");
  }
  if (std::memcmp(h, kTokenFileMagic, 8) != 0) {
    throw std::runtime_error(path +
                             ": not a token file (no MIXTOKS1 magic; use --text for "
                             "the bytes of a plain file)");
  }
  if (GetU32(h + 8) != kTokenFileVersion) {
    throw std::runtime_error(path + ": token file version " + std::to_string(GetU32(h + 8)) +
                             ", this trainer reads version 1");
  }
  d.bytes_per_token_ = static_cast<int>(GetU32(h + 12));
  d.vocab_size_ = static_cast<int>(GetU32(h + 16));
  d.num_tokens_ = GetU64(h + 24);
  if (d.bytes_per_token_ != 1 && d.bytes_per_token_ != 2) {
    throw std::runtime_error(path + ": " + std::to_string(d.bytes_per_token_) +
                             " bytes per token, expected 1 or 2");
  }
  d.file_.seekg(0, std::ios::end);
  const std::uint64_t size = static_cast<std::uint64_t>(d.file_.tellg());
  if (size != kTokenFileHeaderBytes + d.num_tokens_ * d.bytes_per_token_) {
    throw std::runtime_error(path + ": the header says " + std::to_string(d.num_tokens_) +
                             " tokens but the file holds " +
                             std::to_string((size - kTokenFileHeaderBytes) / d.bytes_per_token_));
  }
  d.data_offset_ = kTokenFileHeaderBytes;
  return d;
}

TokenData TokenData::OpenBytes(const std::string& path) {
  TokenData d;
  d.origin_ = path;
  d.file_.open(path, std::ios::binary);
  if (!d.file_) throw std::runtime_error(path + ": cannot open the text file");
  d.file_.seekg(0, std::ios::end);
  d.num_tokens_ = static_cast<std::uint64_t>(d.file_.tellg());
  d.bytes_per_token_ = 1;
  d.vocab_size_ = 256;
  d.data_offset_ = 0;
  return d;
}

void TokenData::Read(std::uint64_t first, std::size_t count, int* out) {
  if (first + count > num_tokens_) {
    throw std::runtime_error(origin_ + ": read past the last token");
  }
  if (!file_.is_open()) {
    for (std::size_t i = 0; i < count; ++i) out[i] = memory_[first + i];
    return;
  }
  buffer_.resize(count * bytes_per_token_);
  file_.clear();
  file_.seekg(static_cast<std::streamoff>(data_offset_ + first * bytes_per_token_));
  if (!file_.read(reinterpret_cast<char*>(buffer_.data()),
                  static_cast<std::streamsize>(buffer_.size()))) {
    throw std::runtime_error(origin_ + ": read failed");
  }
  for (std::size_t i = 0; i < count; ++i) {
    int t = buffer_[i * bytes_per_token_];
    if (bytes_per_token_ == 2) t |= buffer_[i * 2 + 1] << 8;
    if (t >= vocab_size_) {
      throw std::runtime_error(origin_ + ": token " + std::to_string(first + i) + " (" +
                               std::to_string(t) + ") is not below the vocabulary size " +
                               std::to_string(vocab_size_));
    }
    out[i] = t;
  }
}

void TokenData::ReadSequence(std::uint64_t index, int T, int* inputs, int* targets) {
  const std::uint64_t windows = num_windows(T);
  if (windows == 0) {
    throw std::runtime_error(origin_ + ": " + std::to_string(num_tokens_) +
                             " tokens are fewer than one sequence of " + std::to_string(T + 1));
  }
  const std::uint64_t first = (index % windows) * T;
  std::vector<int> buf(T + 1);
  Read(first, T + 1, buf.data());
  std::copy(buf.begin(), buf.end() - 1, inputs);
  std::copy(buf.begin() + 1, buf.end(), targets);
}

}  // namespace mixccl::train
