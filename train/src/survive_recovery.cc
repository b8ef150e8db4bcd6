#include "mixccl/train/survive_recovery.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "mixccl/train/comm_failure.h"
#include "mixccl/train/lost_ranks.h"
#include "mixccl/train/mixccl_collectives.h"
#include "mixccl/train/recovery_call.h"
#include "mixccl/train/survivor_state.h"
#include "mixccl/train/survivors_plan.h"
#include "mixccl/train/train_run.h"

namespace mixccl::train {

namespace {

using Clock = std::chrono::steady_clock;

// How long a survivor waits for a process of this host that mixccl named as failed to end
// (lost_ranks.h): a crashed rank's sockets close just before its process ends.
constexpr double kLostRankGraceS = 2.0;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  if (!in) throw std::runtime_error(path + ": cannot read");
  return s.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(path + ": cannot write");
}

std::string Joined(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// Rank 0's text (a plan, or the reason there is none) on every rank of `comm`.
std::string BroadcastText(const std::string& text, int rank, mixcclComm_t comm) {
  long long size = rank == 0 ? static_cast<long long>(text.size()) : 0;
  CheckRecoveryCall(mixcclBroadcast(&size, &size, 1, mixcclInt64, 0, comm, nullptr), "mixcclBroadcast", comm);
  std::string out = rank == 0 ? text : std::string(static_cast<size_t>(size), '\0');
  CheckRecoveryCall(mixcclBroadcast(out.data(), out.data(), out.size(), mixcclChar, 0, comm, nullptr),
        "mixcclBroadcast", comm);
  return out;
}

class SurvivingJob {
 public:
  SurvivingJob(const TrainCli& cli, const ExecPlan& plan, int rank, int num_ranks)
      : cli_(cli), plan_(plan), cluster_json_(ReadText(cli.cluster)) {
    for (const auto& group : plan.stages) {
      for (const ExecStage& s : group) {
        if (s.tp != 1) {
          throw std::invalid_argument(plan.origin + ": --survive runs plans of tp 1 (a tensor-"
                                      "parallel stage's state is split over its ranks)");
        }
      }
    }
    const RankRole role = PlanRoleWithSpeed(cli, plan, rank);
    comm_ = std::make_unique<MixcclCollectives>(JoinJob(rank, num_ranks), plan, role,
                                                GptStage(cli.options.model, role.range));
    trainer_ = std::make_unique<Trainer>(cli.options, role, LoadTrainData(cli), comm_.get());
    processes_ = GatherJobProcesses(comm_.get(), rank, num_ranks);
    job_ = {trainer_.get(), comm_.get(), rank, num_ranks,
            [this](const CommFailure& f, const StepRecord* done) { return Recover(f, done); }};
  }

  TrainingRank& job() { return job_; }

 private:
  std::vector<StepRecord> Recover(const CommFailure& failure, const StepRecord* finished);

  TrainCli cli_;
  ExecPlan plan_;
  std::string cluster_json_;
  std::vector<JobProcess> processes_;
  std::unique_ptr<MixcclCollectives> comm_;
  std::unique_ptr<Trainer> trainer_;
  TrainingRank job_;
  int recoveries_ = 0;
};

std::vector<StepRecord> SurvivingJob::Recover(const CommFailure& failure,
                                              const StepRecord* finished) {
  const auto failed_at = Clock::now();
  const int old_rank = job_.rank;
  const std::vector<int> lost = LostRanks(failure.what(), processes_, old_rank, kLostRankGraceS);
  if (lost.empty()) {
    throw std::runtime_error("rank " + std::to_string(old_rank) +
                             ": --survive found no lost rank to leave out (no process named "
                             "as failed has ended), so the job cannot go on: " + failure.what());
  }
  std::vector<int> survivors;
  for (int r = 0; r < job_.num_ranks; ++r) {
    if (!std::binary_search(lost.begin(), lost.end(), r)) survivors.push_back(r);
  }
  const int rank = static_cast<int>(std::find(survivors.begin(), survivors.end(), old_rank) -
                                    survivors.begin());
  const int n = static_cast<int>(survivors.size());
  const auto found_at = Clock::now();
  mixcclComm_t world = comm_->ShrinkWorld(lost);
  const auto shrunk_at = Clock::now();

  // The survivors' positions and their last steps' results: a survivor may have finished the
  // step in which the others failed (its sums completed before the loss).
  constexpr int kFields = 5;
  std::vector<double> rows(static_cast<size_t>(n) * kFields, 0.0);
  rows[rank * kFields] = static_cast<double>(trainer_->position().step);
  rows[rank * kFields + 1] = static_cast<double>(trainer_->position().next_sequence);
  rows[rank * kFields + 2] = finished ? finished->loss : 0.0;
  rows[rank * kFields + 3] = finished ? finished->grad_norm : 0.0;
  rows[rank * kFields + 4] = static_cast<double>(trainer_->optimizer().steps());
  CheckRecoveryCall(mixcclAllReduce(rows.data(), rows.data(), rows.size(), mixcclFloat64, mixcclSum, world,
                        nullptr),
        "mixcclAllReduce", world);
  std::vector<long long> steps(n);
  for (int s = 0; s < n; ++s) steps[s] = static_cast<long long>(rows[s * kFields]);
  const long long step = *std::max_element(steps.begin(), steps.end());
  const int source = static_cast<int>(std::find(steps.begin(), steps.end(), step) - steps.begin());

  // The survivors' rank 0 plans; every survivor gets its plan or its error.
  std::vector<std::string> types;
  for (int r : survivors) types.push_back(RoleOfRank(plan_, r).device_type);
  std::string planned;
  if (rank == 0) {
    try {
      const SurvivorsPlan p = PlanForSurvivors(cli_.options.model, cli_.options.global_batch,
                                               cluster_json_, cli_.cluster, types);
      planned = "plan\n" + p.plan_json;
      const std::string dir = cli_.survive + "/recovery-" + std::to_string(recoveries_ + 1);
      std::filesystem::create_directories(dir);
      WriteText(dir + "/cluster.json", p.cluster_json);
      WriteText(dir + "/plan.json", p.plan_json);
    } catch (const std::exception& e) {
      planned = std::string("error\n") + e.what();
    }
  }
  planned = BroadcastText(planned, rank, world);
  const std::string body = planned.substr(planned.find('\n') + 1);
  if (planned.rfind("error\n", 0) == 0) {
    throw std::runtime_error("rank " + std::to_string(rank) + " of the survivors: " + body);
  }
  const std::string dir = cli_.survive + "/recovery-" + std::to_string(recoveries_ + 1);
  const ExecPlan new_plan = ParseExecPlan(body, dir + "/plan.json");
  const auto planned_at = Clock::now();

  const RankRole role = PlanRoleWithSpeed(cli_, new_plan, rank);
  TrainOptions options = cli_.options;
  options.micro_batches = new_plan.micro_batches;
  auto comm = std::make_unique<MixcclCollectives>(world, new_plan, role,
                                                  GptStage(options.model, role.range));
  auto trainer = std::make_unique<Trainer>(options, role, LoadTrainData(cli_), comm.get());
  TakeSurvivorState(cli_.options.model, plan_, *trainer_, survivors, rank, steps, step, new_plan,
                    *trainer, world);
  trainer->optimizer().set_steps(static_cast<long long>(rows[source * kFields + 4]));
  trainer->set_position({static_cast<std::uint64_t>(step),
                         static_cast<std::uint64_t>(rows[source * kFields + 1])});
  std::filesystem::create_directories(dir);
  trainer->Save(dir + "/ckpt" + (n > 1 ? ".rank" + std::to_string(rank) : std::string()));
  const auto done_at = Clock::now();

  std::vector<JobProcess> processes;
  for (int r : survivors) processes.push_back(processes_[r]);
  processes_ = processes;
  comm_ = std::move(comm);  // destroys the old communicators (given up by the shrink)
  trainer_ = std::move(trainer);
  plan_ = new_plan;
  recoveries_ += 1;
  job_.trainer = trainer_.get();
  job_.comm = comm_.get();
  job_.rank = rank;
  job_.num_ranks = n;

  std::vector<StepRecord> missed;
  if (rank != 0) return missed;
  std::vector<int> micro_batches;
  for (int r = 0; r < n; ++r) micro_batches.push_back(RoleOfRank(new_plan, r).micro_batch);
  std::printf(
      "mixccl-train: lost rank(s) %s in step %lld: %d ranks go on with %s/plan.json "
      "(micro-batches %s); recovery %.2f s (find the lost ranks %.2f, shrink %.2f, re-plan "
      "%.2f, state and communicators %.2f); the error: %s\n",
      Joined(lost).c_str(), step + 1, n, dir.c_str(), Joined(micro_batches).c_str(),
      Since(failed_at), std::chrono::duration<double>(found_at - failed_at).count(),
      std::chrono::duration<double>(shrunk_at - found_at).count(),
      std::chrono::duration<double>(planned_at - shrunk_at).count(),
      std::chrono::duration<double>(done_at - planned_at).count(), failure.what());
  std::fflush(stdout);
  if (finished == nullptr || finished->step < step) {
    // Another survivor finished the step this rank failed in: its result is the step's.
    StepRecord r;
    r.step = step;
    r.loss = rows[source * kFields + 2];
    r.grad_norm = rows[source * kFields + 3];
    r.ranks.assign(n, {});
    missed.push_back(r);
  }
  return missed;
}

}  // namespace

int RunSurvivingJob(const TrainCli& cli, const ExecPlan& plan, int rank, int num_ranks) {
  SurvivingJob job(cli, plan, rank, num_ranks);
  return RunTraining(cli, job.job());
}

}  // namespace mixccl::train
