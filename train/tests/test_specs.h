// Small model and cluster specs built in code for the planner tests.
#pragma once

#include <string>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/model_spec.h"

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

}  // namespace mixccl::train::testing
