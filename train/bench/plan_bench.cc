// Planning-time benchmark: three device types at 64, 256 and 1024 devices, 32- and 96-layer
// models. Prints a Markdown table (the one in docs/planner.md).
//
//   mixccl-plan-bench [--repeat R]       the table
//   mixccl-plan-bench --show DEVICES LAYERS   the plan of one of its instances
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "mixccl/train/plan_output.h"
#include "mixccl/train/planner.h"

namespace {

using namespace mixccl::train;

// 1 : 1 : 2 mix of H100, A100 and V100 hosts of eight, as in examples/clusters.
ClusterSpec ThreeTypeCluster(int devices) {
  ClusterSpec c;
  c.name = "bench-" + std::to_string(devices);
  auto type = [](const char* name, int count, double tflops, double fraction, double mem,
                 double bw) {
    DeviceType d;
    d.name = name;
    d.count = count;
    d.peak_tflops = tflops;
    d.achievable_fraction = fraction;
    d.memory_gib = mem;
    d.reserved_gib = 1.5;
    d.domain_bandwidth_GBps = bw;
    d.domain_latency_us = 3;
    d.devices_per_host = 8;
    return d;
  };
  c.device_types.push_back(type("H100", devices / 4, 989, 0.45, 79.6, 450));
  c.device_types.push_back(type("A100", devices / 4, 312, 0.55, 80, 300));
  c.device_types.push_back(type("V100", devices / 2, 125, 0.5, 32, 150));
  c.inter_bandwidth_GBps = 12.5;
  c.inter_latency_us = 10;
  return c;
}

ModelSpec Model(int layers) {
  ModelSpec m;
  // 32 layers: the LLaMA 2 7B shape; 96 layers: the 13B layer shape stacked 96 deep (30B).
  m.name = layers == 32 ? "llama2-7b" : "llama-96l-30b";
  m.num_layers = layers;
  m.hidden_size = layers == 32 ? 4096 : 5120;
  m.ffn_hidden_size = layers == 32 ? 11008 : 13824;
  m.num_attention_heads = layers == 32 ? 32 : 40;
  m.num_kv_heads = m.num_attention_heads;
  m.vocab_size = 32000;
  m.seq_length = 4096;
  m.global_batch_size = 1024;
  m.zero1 = true;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int repeat = 5;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--repeat" && i + 1 < argc) {
        repeat = std::max(1, std::atoi(argv[++i]));
      } else if (a == "--show" && i + 2 < argc) {
        const ClusterSpec cluster = ThreeTypeCluster(std::atoi(argv[i + 1]));
        const ModelSpec model = Model(std::atoi(argv[i + 2]) == 32 ? 32 : 96);
        const PlanResult result = PlanTraining(model, cluster, nullptr, PlannerOptions{});
        std::fputs(PlansToTable(model, cluster, result).c_str(), stdout);
        return result.plans.empty() ? 2 : 0;
      } else {
        std::fprintf(stderr, "usage: mixccl-plan-bench [--repeat R] | --show DEVICES LAYERS\n");
        return 1;
      }
    }
    std::printf(
        "| devices | layers | wall time (median of %d) | CPU time (median) | templates | "
        "combinations | estimates | full evaluations | predicted step | groups |\n",
        repeat);
    std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int devices : {64, 256, 1024}) {
      for (int layers : {32, 96}) {
        const ClusterSpec cluster = ThreeTypeCluster(devices);
        const ModelSpec model = Model(layers);
        std::vector<double> wall, cpu;
        PlanResult result;
        for (int r = 0; r < repeat; ++r) {
          const auto start = std::chrono::steady_clock::now();
          const std::clock_t cpu_start = std::clock();
          result = PlanTraining(model, cluster, nullptr, PlannerOptions{});
          cpu.push_back(static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC);
          wall.push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        std::sort(wall.begin(), wall.end());
        std::sort(cpu.begin(), cpu.end());
        const double step = result.plans.empty() ? 0.0 : result.plans[0].predicted.step_time_s;
        const size_t groups = result.plans.empty() ? 0 : result.plans[0].structure.groups.size();
        std::printf("| %d | %d | %.3f s | %.3f s | %ld | %ld | %ld | %ld | %.2f s | %zu |\n",
                    devices, layers, wall[wall.size() / 2], cpu[cpu.size() / 2],
                    result.stats.templates, result.stats.combinations, result.stats.estimates,
                    result.stats.full_evaluations, step, groups);
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixccl-plan-bench: %s\n", e.what());
    return 1;
  }
}
