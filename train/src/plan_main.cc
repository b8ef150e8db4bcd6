// mixccl-plan: finds how to split a model over a heterogeneous cluster and predicts the cost.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/exec_plan.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/plan_layout.h"
#include "mixccl/train/plan_output.h"
#include "mixccl/train/planner.h"
#include "mixccl/train/profile.h"
#include "mixccl/train/spec_error.h"

namespace {

// Exit codes: 0 plan found, 1 bad command line or input file, 2 no plan fits, 3 internal error.
constexpr int kExitUsage = 1;
constexpr int kExitNoPlan = 2;
constexpr int kExitInternal = 3;

const char kUsage[] =
    "usage: mixccl-plan --model MODEL.json --cluster CLUSTER.json [--profile PROFILE.json]\n"
    "                   [--json] [--top K] [--exhaustive]\n"
    "       mixccl-plan --layout PLAN.json\n"
    "  --model       model spec (layers, sizes, batch, datatypes, optimizer)\n"
    "  --cluster     cluster spec (device types, counts, speed, memory, bandwidths)\n"
    "  --profile     measured per-layer times replacing the analytic estimate\n"
    "  --json        print the plans as JSON instead of a table\n"
    "  --top K       report the best plan and K-1 alternatives (default 3)\n"
    "  --exhaustive  evaluate every candidate with brute-force layer splits (small inputs)\n"
    "  --layout      print each rank's role and 1F1B order in PLAN.json as JSON (the rank map\n"
    "                and schedule that other executors, such as mixccl.train, must follow)\n";

struct Args {
  std::string model, cluster, profile, layout;
  bool json = false;
  bool exhaustive = false;
  bool help = false;
  int top = 3;
};

bool ParseArgs(int argc, char** argv, Args* args, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) {
        *error = a + " needs a value";
        return false;
      }
      *out = argv[++i];
      return true;
    };
    if (a == "--model") {
      if (!value(&args->model)) return false;
    } else if (a == "--cluster") {
      if (!value(&args->cluster)) return false;
    } else if (a == "--profile") {
      if (!value(&args->profile)) return false;
    } else if (a == "--layout") {
      if (!value(&args->layout)) return false;
    } else if (a == "--json") {
      args->json = true;
    } else if (a == "--exhaustive") {
      args->exhaustive = true;
    } else if (a == "--top") {
      std::string v;
      if (!value(&v)) return false;
      char* end = nullptr;
      const long k = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || k < 1 || k > 1000) {
        *error = "--top needs an integer in [1, 1000], got '" + v + "'";
        return false;
      }
      args->top = static_cast<int>(k);
    } else if (a == "--help" || a == "-h") {
      args->help = true;
      return true;
    } else {
      *error = "unknown argument '" + a + "'";
      return false;
    }
  }
  if (!args->layout.empty()) return true;
  if (args->model.empty() || args->cluster.empty()) {
    *error = "--model and --cluster are required";
    return false;
  }
  return true;
}

int Run(int argc, char** argv) {
  using namespace mixccl::train;
  Args args;
  std::string error;
  if (!ParseArgs(argc, argv, &args, &error)) {
    std::fprintf(stderr, "mixccl-plan: %s\n%s", error.c_str(), kUsage);
    return kExitUsage;
  }
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.layout.empty()) {
    try {
      const ExecPlan plan = LoadExecPlan(args.layout);
      int num_layers = 0;
      for (const auto& group : plan.stages) num_layers = std::max(num_layers, group.back().last_layer);
      std::cout << PlanLayoutJson(plan, num_layers);
      return 0;
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "mixccl-plan: %s\n", e.what());
      return kExitUsage;
    }
  }
  const ModelSpec model = LoadModelSpec(args.model);
  const ClusterSpec cluster = LoadClusterSpec(args.cluster);
  std::unique_ptr<LayerProfile> profile;
  if (!args.profile.empty()) profile = std::make_unique<LayerProfile>(LoadProfile(args.profile));
  PlannerOptions options;
  options.top = args.top;
  options.exhaustive = args.exhaustive;
  const PlanResult result = PlanTraining(model, cluster, profile.get(), options);
  if (args.json) {
    std::cout << PlansToJson(model, cluster, result);
  } else if (!result.plans.empty()) {
    std::cout << PlansToTable(model, cluster, result);
  }
  if (result.plans.empty()) {
    std::fprintf(stderr, "mixccl-plan: %s\n", result.error.c_str());
    return kExitNoPlan;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const mixccl::train::SpecError& e) {
    std::fprintf(stderr, "mixccl-plan: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixccl-plan: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
