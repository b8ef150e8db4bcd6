// mixccl-train: the reference trainer. Without --plan it trains the whole model in this
// process; with --plan it is one rank of a mixccl job started by mixcclrun, and runs the part
// of the plan that the rank map gives it (see docs/training.md).
#include <cstdio>
#include <exception>
#include <fstream>

#include "mixccl/train/exec_plan.h"
#include "mixccl/train/layer_profiler.h"
#include "mixccl/train/mixccl_collectives.h"
#include "mixccl/train/speed_emulation.h"
#include "mixccl/train/survive_recovery.h"
#include "mixccl/train/train_cli.h"
#include "mixccl/train/train_run.h"

using namespace mixccl::train;

namespace {

int RunPlan(TrainCli& cli) {
  const ExecPlan plan = LoadExecPlan(cli.plan);
  if (plan.global_batch == 0) {
    throw std::invalid_argument(cli.plan + ": has no \"global_batch_size\"");
  }
  cli.options.global_batch = plan.global_batch;
  cli.options.micro_batches = plan.micro_batches;
  int rank = 0, num_ranks = 0;
  ReadJobEnvironment(&rank, &num_ranks);
  // Every rank checks the plan, and the device types of all its stages, before joining, so a
  // bad plan fails every rank the same way instead of leaving the others waiting at the
  // rendezvous.
  CheckExecPlan(plan, cli.options, num_ranks);
  if (!cli.survive.empty()) return RunSurvivingJob(cli, plan, rank, num_ranks);
  const RankRole role = PlanRoleWithSpeed(cli, plan, rank);
  mixcclComm_t world = JoinJob(rank, num_ranks);
  // The communicators need only the stage's parameter layout, which a bare stage has.
  MixcclCollectives comm(world, plan, role, GptStage(cli.options.model, role.range, role.tp),
                         cli.options.zero1);
  Trainer trainer(cli.options, role, LoadTrainData(cli), &comm);
  return RunTraining(cli, trainer, &comm, rank, num_ranks);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(path + ": cannot write");
}

void PrintParts(const std::string& type, const std::vector<MeasuredPart>& parts, double k,
                const char* what) {
  for (const MeasuredPart& p : parts) {
    std::printf(
        "%s micro-batch %2d  block %.3f/%.3f ms  embedding %.3f/%.3f ms  head "
        "%.3f/%.3f ms  (forward/backward before the slowdown %.2f, %s)\n",
        type.c_str(), p.micro_batch, p.block_forward_s * 1e3, p.block_backward_s * 1e3,
        p.embedding_forward_s * 1e3, p.embedding_backward_s * 1e3, p.head_forward_s * 1e3,
        p.head_backward_s * 1e3, k, what);
  }
}

// Profiling mode: one process measures the parts of the model and writes the planner's inputs.
int RunProfiling(const TrainCli& cli) {
  const ClusterSpec cluster = LoadClusterSpec(cli.cluster);
  ProfilerOptions options;
  options.micro_batches = cli.profile_micro_batches;
  std::vector<double> slowdowns;
  std::vector<int> threads;
  for (const DeviceType& d : cluster.device_types) {
    slowdowns.push_back(cli.slowdown_base * EmulatedSlowdown(cluster, d.name, cli.cluster, ""));
    threads.push_back(d.cpu_threads);
  }
  std::vector<std::vector<MeasuredPart>> parts =
      MeasureParts(cli.options.model, options, slowdowns, threads);
  for (size_t t = 0; t < parts.size(); ++t) {
    const std::string& name = cluster.device_types[t].name;
    if (!cli.quiet) PrintParts(name, parts[t], slowdowns[t], "measured");
    // The profile holds the affine fit over the sizes (layer_profiler.h).
    FitOverMicroBatches(&parts[t]);
    if (!cli.quiet) PrintParts(name, parts[t], slowdowns[t], "fitted");
  }
  const MeasuredUpdate update = MeasureUpdate(cli.options.model, options.repeats);
  if (!cli.quiet) {
    std::printf("update (zero gradients, norm, AdamW) of %.0f parameters %.3f ms, every type\n",
                update.parameters, update.seconds * 1e3);
  }
  WriteFile(cli.profile_out,
            ProfileJson(cli.options.model, cluster, parts, cli.slowdown_base, update));
  if (!cli.model_spec_out.empty()) {
    WriteFile(cli.model_spec_out,
              PlannerModelSpecJson(cli.options.model, cli.options.global_batch));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TrainCli cli;
  try {
    cli = ParseTrainCli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixccl-train: %s\n%s", e.what(), kTrainUsage);
    return 1;
  }
  if (cli.help) {
    std::printf("%s", kTrainUsage);
    return 0;
  }
  try {
    if (!cli.profile_out.empty()) return RunProfiling(cli);
    if (!cli.plan.empty()) return RunPlan(cli);
    RankRole role = RankRole::SingleProcess(cli.options);
    if (!cli.cluster.empty()) {
      const ClusterSpec cluster = LoadClusterSpec(cli.cluster);
      role.device_type = cli.device_type;
      role.slowdown = cli.slowdown_base *
                      EmulatedSlowdown(cluster, cli.device_type, cli.cluster, "--device-type");
      role.blas_threads = cluster.device_types[cluster.FindType(cli.device_type)].cpu_threads;
    }
    Trainer trainer(cli.options, role, LoadTrainData(cli), nullptr);
    return RunTraining(cli, trainer, nullptr, 0, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixccl-train: %s\n", e.what());
    return 1;
  }
}
