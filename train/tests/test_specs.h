// Small model and cluster specs built in code for the planner tests.
#pragma once

#include <string>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/plan_evaluator.h"

namespace mixccl::train::testing {

// A LLaMA-shaped model small enough for brute-force enumeration.
inline ModelSpec SmallModel(int layers, int global_batch) {
  ModelSpec m;
  m.name = "small";
  m.num_layers = layers;
  m.hidden_size = 1024;
  m.ffn_hidden_size = 2816;
  m.num_attention_heads = 8;
  m.num_kv_heads = 8;
  m.vocab_size = 8192;
  m.seq_length = 1024;
  m.global_batch_size = global_batch;
  return m;
}

inline DeviceType Device(const std::string& name, int count, double tflops, double memory_gib,
                         int per_host) {
  DeviceType d;
  d.name = name;
  d.count = count;
  d.peak_tflops = tflops;
  d.achievable_fraction = 0.5;
  d.memory_gib = memory_gib;
  d.reserved_gib = 1.0;
  d.domain_bandwidth_GBps = 200;
  d.domain_latency_us = 3;
  d.devices_per_host = per_host;
  return d;
}

inline ClusterSpec Cluster(std::initializer_list<DeviceType> types, double inter_GBps = 25.0) {
  ClusterSpec c;
  c.name = "test";
  c.device_types = types;
  c.inter_bandwidth_GBps = inter_GBps;
  c.inter_latency_us = 10;
  return c;
}

// Two device types of one device each: "fast" (200 TFLOP/s) and "slow" (100).
inline ClusterSpec FastSlow() {
  return Cluster({Device("fast", 1, 200, 80, 1), Device("slow", 1, 100, 80, 1)});
}

// A profile document (the JSON mixccl-plan --profile reads), built entry by entry.
class ProfileJson {
 public:
  // A timed part ("layer", "embedding", "head", "pass", "message") of a device type at tp 1.
  void Add(const std::string& type, const std::string& part, int micro_batch, double forward_ms,
           double backward_ms) {
    entries_ += std::string(entries_.empty() ? "" : ",") + R"({"device_type": ")" + type +
                R"(", "tp": 1, "part": ")" + part + R"(", "micro_batch": )" +
                std::to_string(micro_batch) + R"(, "forward_ms": )" + std::to_string(forward_ms) +
                R"(, "backward_ms": )" + std::to_string(backward_ms) + "}";
  }
  std::string Text() const { return R"({"entries": [)" + entries_ + "]}"; }

 private:
  std::string entries_;
};

// One replica of FastSlow() at tp 1: a pipeline of "slow" (1 layer, the embedding) then "fast"
// (3 layers, the head), micro_batches micro-batches of micro_batch sequences, no recompute.
inline Plan PriceSlowThenFast(const PlanEvaluator& evaluator, int micro_batches,
                              int micro_batch) {
  Structure s;
  s.groups.push_back(GroupTemplate{{1, 0}, {1, 1}, {1, 1}, 1});
  return evaluator.Price(s, micro_batches, {{{1, micro_batch}}}, {{1, 3}}, {{0, 0}});
}

}  // namespace mixccl::train::testing
