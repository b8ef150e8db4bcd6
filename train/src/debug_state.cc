#include "mixccl/train/debug_state.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace mixccl::train {

static_assert(sizeof(int) == 4 && sizeof(float) == 4, "the arrays are written as <i4 and <f4");

void WriteNpy(const std::string& path, const char* descr, const std::vector<std::size_t>& shape,
              const void* bytes, std::size_t element_size) {
  std::string dims;
  std::size_t count = 1;
  for (std::size_t d : shape) {
    dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    count *= d;
  }
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // The 10 bytes of magic, version and length plus the header are padded with spaces to a
  // multiple of 64 and end in a newline.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const unsigned char lead[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                  static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
  f.write(reinterpret_cast<const char*>(lead), sizeof lead);
  f << header;
  f.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(count * element_size));
  if (!f) throw std::runtime_error(path + ": cannot write");
}

DebugStateRecorder::DebugStateRecorder(std::string dir, Trainer& trainer)
    : dir_(std::move(dir)), trainer_(trainer) {
  const RankRole& role = trainer.role();
  if (role.num_replicas != 1 || role.num_stages != 1 || role.tp.size != 1) {
    throw std::invalid_argument("--debug-state records a single process's run");
  }
  if (mkdir(dir_.c_str(), 0777) != 0 && errno != EEXIST) {
    throw std::runtime_error(dir_ + ": cannot create the directory: " + std::strerror(errno));
  }
  first_step_ = trainer.position().step;
  trainer.Save(dir_ + "/start.ckpt");
}

void DebugStateRecorder::BeforeStep() {
  std::vector<int> tokens, targets;
  for (int slot = 0; slot < trainer_.options().micro_batches; ++slot) {
    trainer_.ReadMicroBatch(slot, tokens, targets);
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    targets_.insert(targets_.end(), targets.begin(), targets.end());
  }
}

void DebugStateRecorder::AfterStep(const StepRecord& record) {
  if (losses_.empty()) {
    // The gradient is left from the step (the optimizer reads it, scaled, without changing
    // it) and the logits are those of its last forward, the last micro-batch.
    GptStage& stage = trainer_.stage();
    grads_ = stage.grads();
    logits_ = stage.logits();
    logits_sequences_ = trainer_.role().micro_batch;
  }
  losses_.push_back(record.loss);
  grad_norms_.push_back(record.grad_norm);
}

void DebugStateRecorder::Finish() {
  if (losses_.empty()) {
    throw std::runtime_error(dir_ + ": --debug-state recorded no step (the run was already at "
                             "--steps)");
  }
  const TrainOptions& o = trainer_.options();
  const std::size_t N = losses_.size(), G = o.global_batch, T = o.model.seq_len;
  const GptStage& stage = trainer_.stage();
  nlohmann::ordered_json j;
  j["schema"] = "mixccl-train-debug-state";
  j["version"] = 1;
  // The values the computation uses (floats, written exactly), not the decimals typed.
  j["adamw"] = {{"learning_rate", o.adamw.learning_rate}, {"beta1", o.adamw.beta1},
                {"beta2", o.adamw.beta2},                 {"eps", o.adamw.eps},
                {"weight_decay", o.adamw.weight_decay},   {"grad_clip", o.adamw.grad_clip}};
  j["global_batch"] = o.global_batch;
  j["micro_batches"] = o.micro_batches;
  j["first_step"] = first_step_;
  j["steps"] = N;
  j["logits_first_sequence"] = o.global_batch - logits_sequences_;
  j["logits_sequences"] = logits_sequences_;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const ParamTensor& t : stage.tensors()) {
    tensors.push_back({{"name", t.name}, {"offset", t.offset}, {"size", t.size},
                       {"decay", t.decay}});
  }
  j["tensors"] = tensors;
  j["loss"] = losses_;
  j["grad_norm"] = grad_norms_;
  {
    std::ofstream f(dir_ + "/meta.json");
    f << j.dump(1) << "\n";
    if (!f) throw std::runtime_error(dir_ + "/meta.json: cannot write");
  }
  const std::size_t V = o.model.vocab_size, n = stage.params().size();
  WriteNpy(dir_ + "/tokens.npy", "<i4", {N, G, T}, tokens_.data(), sizeof(int));
  WriteNpy(dir_ + "/targets.npy", "<i4", {N, G, T}, targets_.data(), sizeof(int));
  WriteNpy(dir_ + "/logits.npy", "<f4", {static_cast<std::size_t>(logits_sequences_), T, V},
           logits_.data(), sizeof(float));
  WriteNpy(dir_ + "/grads.npy", "<f4", {n}, grads_.data(), sizeof(float));
  WriteNpy(dir_ + "/params_end.npy", "<f4", {n}, stage.params().data(), sizeof(float));
}

}  // namespace mixccl::train
