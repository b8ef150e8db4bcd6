#include "mixccl/train/train_run.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "mixccl/train/debug_state.h"
#include "mixccl/train/train_report.h"

namespace mixccl::train {

TokenData LoadTrainData(const TrainCli& cli) {
  if (!cli.data.empty()) return TokenData::Open(cli.data);
  if (!cli.text.empty()) return TokenData::OpenBytes(cli.text);
  const std::string text = GenerateDefaultText(cli.default_text_bytes, 1);
  return TokenData::FromTokens(std::vector<int>(text.begin(), text.end()), 256,
                               "generated text (" + std::to_string(text.size()) + " bytes)");
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
  if (!cli.resume.empty()) trainer.Resume(RankPath(cli.resume, rank, num_ranks));
  std::unique_ptr<DebugStateRecorder> debug;
  if (!cli.debug_state.empty()) {
    debug = std::make_unique<DebugStateRecorder>(cli.debug_state, trainer);
  }
  std::vector<StepRecord> steps;
  double compute = 0.0, comm_time = 0.0, total = 0.0;
  while (static_cast<int>(trainer.position().step) < cli.steps) {
    if (debug) debug->BeforeStep();
    StepRecord r = trainer.Step();
    if (debug) debug->AfterStep(r);
    r.ranks = GatherStepTimes(r, comm, rank, num_ranks);
    steps.push_back(r);
    compute += r.compute_s;
    comm_time += r.comm_s;
    total += r.step_time_s;
    if (rank == 0 && !cli.quiet) {
      std::printf("%s\n", StepLogLine(r, cli.steps).c_str());
      std::fflush(stdout);
    }
    if (!cli.checkpoint.empty() && cli.checkpoint_every > 0 && r.step % cli.checkpoint_every == 0) {
      trainer.Save(RankPath(cli.checkpoint, rank, num_ranks));
    }
  }
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
