#include "mixccl/train/train_run.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/debug_state.h"
#include "mixccl/train/speed_emulation.h"
#include "mixccl/train/train_report.h"

namespace mixccl::train {

TokenData LoadTrainData(const TrainCli& cli) {
  if (!cli.data.empty()) return TokenData::Open(cli.data);
  if (!cli.text.empty()) return TokenData::OpenBytes(cli.text);
  const std::string text = GenerateDefaultText(cli.default_text_bytes, 1);
  return TokenData::FromTokens(std::vector<int>(text.begin(), text.end()), 256,
                               "generated text (" + std::to_string(text.size()) + " bytes)");
}

RankRole PlanRoleWithSpeed(const TrainCli& cli, const ExecPlan& plan, int rank) {
  RankRole role = RoleOfRank(plan, rank);
  if (!cli.cluster.empty()) {
    const ClusterSpec cluster = LoadClusterSpec(cli.cluster);
    const RankPlacement mine = PlaceRank(plan.structure, rank);
    for (size_t g = 0; g < plan.stages.size(); ++g) {
      for (size_t s = 0; s < plan.stages[g].size(); ++s) {
        const double k = EmulatedSlowdown(
            cluster, plan.stages[g][s].device_type, cli.cluster,
            "the plan's group " + std::to_string(g) + " stage " + std::to_string(s));
        if (static_cast<int>(g) == mine.group && static_cast<int>(s) == mine.stage) {
          role.slowdown = k * cli.slowdown_base;
          role.blas_threads =
              cluster.device_types[cluster.FindType(plan.stages[g][s].device_type)].cpu_threads;
        }
      }
    }
  }
  return role;
}

namespace {

std::string RankPath(const std::string& path, int rank, int num_ranks) {
  return num_ranks == 1 ? path : path + ".rank" + std::to_string(rank);
}

// Every rank's times of one step, on rank 0: one sum in which each rank fills its own row.
// It runs after the step's clock stopped, so it does not count in the step time.
std::vector<RankStepTimes> GatherStepTimes(const StepRecord& r, Collectives* comm, int rank,
                                           int num_ranks) {
  std::vector<double> rows(static_cast<size_t>(num_ranks) * 3, 0.0);
  rows[rank * 3] = r.compute_s;
  rows[rank * 3 + 1] = r.comm_s;
  rows[rank * 3 + 2] = r.step_time_s - r.compute_s - r.comm_s;
  if (comm != nullptr) comm->SumOverAll(rows.data(), rows.size());
  std::vector<RankStepTimes> out(num_ranks);
  for (int i = 0; i < num_ranks; ++i) out[i] = {rows[i * 3], rows[i * 3 + 1], rows[i * 3 + 2]};
  return out;
}

}  // namespace

int RunTraining(const TrainCli& cli, Trainer& trainer, Collectives* comm, int rank, int num_ranks) {
  TrainingRank job{&trainer, comm, rank, num_ranks, {}};
  return RunTraining(cli, job);
}

int RunTraining(const TrainCli& cli, TrainingRank& job) {
  if (!cli.resume.empty()) job.trainer->Resume(RankPath(cli.resume, job.rank, job.num_ranks));
  std::unique_ptr<DebugStateRecorder> debug;
  if (!cli.debug_state.empty()) {
    debug = std::make_unique<DebugStateRecorder>(cli.debug_state, *job.trainer);
  }
  std::vector<StepRecord> steps;
  double compute = 0.0, comm_time = 0.0, total = 0.0;
  auto log = [&](const StepRecord& r) {
    steps.push_back(r);
    compute += r.compute_s;
    comm_time += r.comm_s;
    total += r.step_time_s;
    if (job.rank == 0 && !cli.quiet) {
      std::printf("%s\n", StepLogLine(r, cli.steps).c_str());
      std::fflush(stdout);
    }
  };
  // The last step this rank finished in this run, for a recovery.
  std::unique_ptr<StepRecord> finished;
  while (static_cast<int>(job.trainer->position().step) < cli.steps) {
    if (debug) debug->BeforeStep();
    StepRecord r;
    try {
      r = job.trainer->Step();
    } catch (const CommFailure& failure) {
      if (!job.recover) throw;
      for (const StepRecord& missed : job.recover(failure, finished.get())) log(missed);
      continue;
    }
    if (debug) debug->AfterStep(r);
    finished = std::make_unique<StepRecord>(r);
    try {
      r.ranks = GatherStepTimes(r, job.comm, job.rank, job.num_ranks);
    } catch (const CommFailure& failure) {
      // The step itself is done on this rank: it is logged with this rank's times only.
      if (!job.recover) throw;
      r.ranks.assign(job.num_ranks, {});
      r.ranks[job.rank] = {r.compute_s, r.comm_s, r.step_time_s - r.compute_s - r.comm_s};
      log(r);
      for (const StepRecord& missed : job.recover(failure, finished.get())) log(missed);
      continue;
    }
    log(r);
    if (!cli.checkpoint.empty() && cli.checkpoint_every > 0 && r.step % cli.checkpoint_every == 0) {
      job.trainer->Save(RankPath(cli.checkpoint, job.rank, job.num_ranks));
    }
  }
  Trainer& trainer = *job.trainer;
  Collectives* comm = job.comm;
  const int rank = job.rank, num_ranks = job.num_ranks;
  if (!cli.checkpoint.empty()) trainer.Save(RankPath(cli.checkpoint, rank, num_ranks));
  if (debug) debug->Finish();

  // Every rank's summary reaches rank 0 through one sum: each rank fills only its own row.
  constexpr int kFields = 15;
  std::vector<double> rows(static_cast<size_t>(num_ranks) * kFields, 0.0);
  const RankRole& role = trainer.role();
  double* mine = rows.data() + static_cast<size_t>(rank) * kFields;
  const double values[kFields] = {static_cast<double>(role.replica),
                                  static_cast<double>(role.stage),
                                  static_cast<double>(role.range.first_layer),
                                  static_cast<double>(role.range.last_layer),
                                  static_cast<double>(role.range.recompute),
                                  static_cast<double>(role.micro_batch),
                                  compute,
                                  comm_time,
                                  total - compute - comm_time,
                                  PeakRssBytes(),
                                  static_cast<double>(role.tp.index),
                                  role.slowdown,
                                  4.0 * trainer.optimizer().state_floats(),
                                  trainer.emulation_behind_s(),
                                  static_cast<double>(trainer.compute_threads())};
  std::copy(values, values + kFields, mine);
  if (comm != nullptr) comm->SumOverAll(rows.data(), rows.size());
  if (rank != 0 || cli.report.empty()) return 0;

  std::vector<RankSummary> ranks(num_ranks);
  for (int r = 0; r < num_ranks; ++r) {
    const double* v = rows.data() + static_cast<size_t>(r) * kFields;
    RankSummary& s = ranks[r];
    s.rank = r;
    s.role.replica = static_cast<int>(v[0]);
    s.role.stage = static_cast<int>(v[1]);
    s.role.range.first_layer = static_cast<int>(v[2]);
    s.role.range.last_layer = static_cast<int>(v[3]);
    s.role.range.recompute = static_cast<int>(v[4]);
    s.role.micro_batch = static_cast<int>(v[5]);
    s.compute_s = v[6];
    s.comm_s = v[7];
    s.idle_s = v[8];
    s.peak_rss_bytes = v[9];
    s.role.tp.index = static_cast<int>(v[10]);
    s.role.slowdown = v[11];
    s.optimizer_state_bytes = v[12];
    s.emulation_behind_s = v[13];
    s.role.blas_threads = static_cast<int>(v[14]);
  }
  std::ofstream out(cli.report);
  out << ReportJson(cli, trainer.data().origin(), num_ranks, trainer.stage().params().size(), steps,
                    ranks);
  if (!out) throw std::runtime_error(cli.report + ": cannot write the report");
  return 0;
}

}  // namespace mixccl::train
