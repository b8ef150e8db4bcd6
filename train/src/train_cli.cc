#include "mixccl/train/train_cli.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace mixccl::train {

const char kTrainUsage[] =
    "usage: mixccl-train [--steps N] [--global-batch G] [--micro-batches M]\n"
    "                    [--layers L] [--channels C] [--heads H] [--seq-len T] [--vocab V]\n"
    "                    [--lr X] [--weight-decay X] [--grad-clip X] [--seed S]\n"
    "                    [--data TOKENS | --text FILE | --default-text-bytes N]\n"
    "                    [--plan PLAN.json] [--checkpoint PATH [--checkpoint-every K]]\n"
    "                    [--resume PATH] [--report REPORT.json] [--quiet]\n"
    "                    [--cluster CLUSTER.json [--device-type NAME] [--slowdown-base B]]\n"
    "                    [--zero1] [--debug-state DIR] [--survive DIR]\n"
    "       mixccl-train --profile-out PROFILE.json --cluster CLUSTER.json\n"
    "                    [--model-spec-out MODEL.json] [--profile-micro-batches 1,2,4,8]\n"
    "                    [model options] [--global-batch G]\n"
    "  Trains a GPT-style model on the CPU; with --plan, as one rank of a mixccl job\n"
    "  (started by mixcclrun). See docs/training.md.\n";

namespace {

long long ParseInt(const std::string& flag, const std::string& v, long long lo) {
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo) {
    throw std::invalid_argument(flag + " wants an integer >= " + std::to_string(lo) + ", got '" +
                                v + "'");
  }
  return x;
}

float ParseFloat(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const float x = std::strtof(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= 0.0f)) {
    throw std::invalid_argument(flag + " wants a number >= 0, got '" + v + "'");
  }
  return x;
}

}  // namespace

TrainCli ParseTrainCli(int argc, char** argv) {
  TrainCli c;
  TrainOptions& o = c.options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    auto int_value = [&](long long lo) { return static_cast<int>(ParseInt(a, value(), lo)); };
    if (a == "--help" || a == "-h") {
      c.help = true;
    } else if (a == "--steps") {
      c.steps = int_value(0);
    } else if (a == "--global-batch") {
      o.global_batch = int_value(1);
      c.batch_given = true;
    } else if (a == "--micro-batches") {
      o.micro_batches = int_value(1);
      c.batch_given = true;
    } else if (a == "--layers") {
      o.model.num_layers = int_value(1);
    } else if (a == "--channels") {
      o.model.channels = int_value(1);
    } else if (a == "--heads") {
      o.model.num_heads = int_value(1);
    } else if (a == "--seq-len") {
      o.model.seq_len = int_value(1);
    } else if (a == "--vocab") {
      o.model.vocab_size = int_value(2);
    } else if (a == "--lr") {
      o.adamw.learning_rate = ParseFloat(a, value());
    } else if (a == "--weight-decay") {
      o.adamw.weight_decay = ParseFloat(a, value());
    } else if (a == "--grad-clip") {
      o.adamw.grad_clip = ParseFloat(a, value());
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(ParseInt(a, value(), 0));
    } else if (a == "--data") {
      c.data = value();
    } else if (a == "--text") {
      c.text = value();
    } else if (a == "--default-text-bytes") {
      c.default_text_bytes = static_cast<std::size_t>(ParseInt(a, value(), 1));
    } else if (a == "--plan") {
      c.plan = value();
    } else if (a == "--checkpoint") {
      c.checkpoint = value();
    } else if (a == "--checkpoint-every") {
      c.checkpoint_every = int_value(0);
    } else if (a == "--resume") {
      c.resume = value();
    } else if (a == "--report") {
      c.report = value();
    } else if (a == "--debug-state") {
      c.debug_state = value();
    } else if (a == "--cluster") {
      c.cluster = value();
    } else if (a == "--device-type") {
      c.device_type = value();
    } else if (a == "--profile-out") {
      c.profile_out = value();
    } else if (a == "--model-spec-out") {
      c.model_spec_out = value();
    } else if (a == "--profile-micro-batches") {
      const std::string list = value();
      c.profile_micro_batches.clear();
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        c.profile_micro_batches.push_back(
            static_cast<int>(ParseInt(a, list.substr(start, comma - start), 1)));
        start = comma + 1;
      }
    } else if (a == "--slowdown-base") {
      c.slowdown_base = ParseFloat(a, value());
      if (c.slowdown_base < 1.0) {
        throw std::invalid_argument("--slowdown-base wants a number >= 1");
      }
    } else if (a == "--zero1") {
      o.zero1 = true;
    } else if (a == "--quiet") {
      c.quiet = true;
    } else if (a == "--survive") {
      c.survive = value();
    } else {
      throw std::invalid_argument("unknown option '" + a + "'");
    }
  }
  if (!c.data.empty() && !c.text.empty()) {
    throw std::invalid_argument("--data and --text both name the training data; give one");
  }
  if (!c.plan.empty() && c.batch_given) {
    throw std::invalid_argument(
        "with --plan the global batch and the micro-batches come from "
        "the plan: leave out --global-batch and --micro-batches");
  }
  if (!c.device_type.empty() && c.cluster.empty()) {
    throw std::invalid_argument("--device-type names a type of --cluster CLUSTER.json; give both");
  }
  if (!c.device_type.empty() && !c.plan.empty()) {
    throw std::invalid_argument("with --plan each rank's device type comes from the plan: "
                                "leave out --device-type");
  }
  if (c.slowdown_base != 1.0 && c.cluster.empty()) {
    throw std::invalid_argument("--slowdown-base scales the speeds of --cluster CLUSTER.json; "
                                "give both");
  }
  if (!c.profile_out.empty() && (c.cluster.empty() || !c.plan.empty())) {
    throw std::invalid_argument("--profile-out measures the device types of --cluster "
                                "CLUSTER.json in one process: give --cluster, not --plan");
  }
  if (!c.model_spec_out.empty() && c.profile_out.empty()) {
    throw std::invalid_argument("--model-spec-out is written by the profiling mode: give "
                                "--profile-out too");
  }
  if (!c.cluster.empty() && c.plan.empty() && c.device_type.empty() && c.profile_out.empty()) {
    throw std::invalid_argument("--cluster emulates device speeds: a single process needs "
                                "--device-type NAME");
  }
  if (!c.debug_state.empty() && (!c.plan.empty() || !c.profile_out.empty())) {
    throw std::invalid_argument("--debug-state records a single process's training run: leave "
                                "out --plan and --profile-out");
  }
  if (c.checkpoint_every > 0 && c.checkpoint.empty()) {
    throw std::invalid_argument("--checkpoint-every needs --checkpoint PATH");
  }
  if (!c.survive.empty() && (c.plan.empty() || c.cluster.empty())) {
    throw std::invalid_argument("--survive DIR keeps a job going when ranks are lost: it needs "
                                "--plan PLAN.json and --cluster CLUSTER.json (the survivors "
                                "re-plan for the device types left)");
  }
  if (!c.survive.empty() && o.zero1) {
    throw std::invalid_argument("--survive needs every replica to hold its stage's whole "
                                "optimizer state: leave out --zero1");
  }
  ValidateGptConfig(o.model);
  return c;
}

}  // namespace mixccl::train
