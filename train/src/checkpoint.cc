#include "mixccl/train/checkpoint.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace mixccl::train {

namespace {

constexpr char kMagic[8] = {'M', 'I', 'X', 'C', 'K', 'P', 'T', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kHeaderBytes = 96;

// The fields of the header that say which model part the file holds, in file order.
std::vector<std::int32_t> Shape(const GptConfig& c, const StageRange& r) {
  return {c.vocab_size,  c.seq_len,    c.channels,          c.num_heads,   c.num_layers,
          r.first_layer, r.last_layer, r.embedding ? 1 : 0, r.head ? 1 : 0};
}
const char* const kShapeNames[] = {"vocab_size", "seq_len",    "channels",
                                   "num_heads",  "num_layers", "first_layer",
                                   "last_layer", "embedding",  "head"};

template <typename T>
void Put(std::vector<unsigned char>& h, size_t at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    h[at + i] = static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i));
  }
}
template <typename T>
T Get(const unsigned char* h, size_t at) {
  std::uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(h[at + i]) << (8 * i);
  return static_cast<T>(v);
}

// The arrays are written as the host's float bytes: the trainer targets little-endian hosts
// (x86-64, aarch64), where that is the documented format.
void WriteFloats(std::ofstream& f, const std::vector<float>& v) {
  f.write(reinterpret_cast<const char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(float)));
}
void ReadFloats(std::ifstream& f, std::vector<float>& v, const std::string& path) {
  if (!f.read(reinterpret_cast<char*>(v.data()),
              static_cast<std::streamsize>(v.size() * sizeof(float)))) {
    throw std::runtime_error(path + ": checkpoint is truncated");
  }
}

}  // namespace

void SaveCheckpoint(const std::string& path, const GptStage& stage, AdamW& optimizer,
                    const TrainPosition& position) {
  std::vector<unsigned char> h(kHeaderBytes, 0);
  std::memcpy(h.data(), kMagic, 8);
  Put<std::uint32_t>(h, 8, kVersion);
  Put<std::uint32_t>(h, 12, kHeaderBytes);
  const std::vector<std::int32_t> shape = Shape(stage.config(), stage.range());
  for (size_t i = 0; i < shape.size(); ++i) Put<std::uint32_t>(h, 16 + 4 * i, shape[i]);
  Put<std::uint64_t>(h, 56, position.step);
  Put<std::uint64_t>(h, 64, position.next_sequence);
  Put<std::uint64_t>(h, 72, static_cast<std::uint64_t>(optimizer.steps()));
  Put<std::uint64_t>(h, 80, stage.params().size());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(h.data()), kHeaderBytes);
    // ZeRO-1 holds moments for its shards only; the file has all n, zeros elsewhere.
    std::vector<float> m, v;
    optimizer.ExportMoments(&m, &v);
    WriteFloats(f, stage.params());
    WriteFloats(f, m);
    WriteFloats(f, v);
    f.flush();
    if (!f) throw std::runtime_error(tmp + ": cannot write the checkpoint");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(path + ": cannot rename " + tmp + " to it");
  }
}

TrainPosition LoadCheckpoint(const std::string& path, GptStage& stage, AdamW& optimizer) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open the checkpoint");
  unsigned char h[kHeaderBytes];
  if (!f.read(reinterpret_cast<char*>(h), kHeaderBytes) || std::memcmp(h, kMagic, 8) != 0) {
    throw std::runtime_error(path + ": not a mixccl-train checkpoint (no MIXCKPT1 header)");
  }
  if (Get<std::uint32_t>(h, 8) != kVersion || Get<std::uint32_t>(h, 12) != kHeaderBytes) {
    throw std::runtime_error(path + ": checkpoint version " +
                             std::to_string(Get<std::uint32_t>(h, 8)) +
                             ", this trainer reads version 1");
  }
  const std::vector<std::int32_t> want = Shape(stage.config(), stage.range());
  for (size_t i = 0; i < want.size(); ++i) {
    const std::int32_t got = static_cast<std::int32_t>(Get<std::uint32_t>(h, 16 + 4 * i));
    if (got != want[i]) {
      throw std::runtime_error(path + ": checkpoint has " + kShapeNames[i] + " " +
                               std::to_string(got) + ", this run has " + std::to_string(want[i]));
    }
  }
  if (Get<std::uint64_t>(h, 80) != stage.params().size()) {
    throw std::runtime_error(path + ": checkpoint holds " +
                             std::to_string(Get<std::uint64_t>(h, 80)) + " parameters, the stage " +
                             std::to_string(stage.params().size()));
  }
  ReadFloats(f, stage.params(), path);
  std::vector<float> m(stage.params().size()), v(stage.params().size());
  ReadFloats(f, m, path);
  ReadFloats(f, v, path);
  optimizer.ImportMoments(m, v);
  if (f.peek() != std::char_traits<char>::eof()) {
    throw std::runtime_error(path + ": checkpoint has bytes after its last array");
  }
  optimizer.set_steps(static_cast<long long>(Get<std::uint64_t>(h, 72)));
  TrainPosition p;
  p.step = Get<std::uint64_t>(h, 56);
  p.next_sequence = Get<std::uint64_t>(h, 64);
  return p;
}

}  // namespace mixccl::train
