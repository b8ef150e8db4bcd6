#include <gtest/gtest.h>

#include <string>

#include "mixccl/train/cluster_spec.h"
#include "mixccl/train/model_spec.h"
#include "mixccl/train/profile.h"
#include "mixccl/train/spec_error.h"

namespace mixccl::train {
namespace {

const char kModel[] = R"({
  "name": "m", "num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 688,
  "num_attention_heads": 4, "num_kv_heads": 2, "vocab_size": 1000, "seq_length": 128,
  "global_batch_size": 8, "param_dtype": "bf16", "grad_dtype": "fp32",
  "optimizer": {"type": "adam", "zero1": true}, "comment": "allowed"
})";

const char kCluster[] = R"({
  "name": "c",
  "device_types": [
    {"name": "A", "count": 4, "peak_tflops": 100, "achievable_fraction": 0.5,
     "memory_gib": 16, "domain_bandwidth_GBps": 50, "devices_per_host": 4}
  ],
  "inter_domain": {"bandwidth_GBps": 10, "latency_us": 5}
})";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(Specs, ModelFieldsAndDefaults) {
  const ModelSpec m = ParseModelSpec(kModel, "m.json");
  EXPECT_EQ(m.num_layers, 4);
  EXPECT_EQ(m.num_kv_heads, 2);
  EXPECT_EQ(m.kv_hidden(), 128);
  EXPECT_EQ(m.grad_dtype, DType::kFp32);
  EXPECT_TRUE(m.zero1);
  EXPECT_TRUE(m.gated_mlp);
  EXPECT_TRUE(m.flash_attention);
  EXPECT_FALSE(m.tie_embeddings);
}

TEST(Specs, ModelErrorsNameTheFileAndField) {
  EXPECT_NE(ErrorOf([] {
              ParseModelSpec(Replace(kModel, "\"hidden_size\"", "\"hiden_size\""), "x.json");
            }).find("x.json: unknown field 'hiden_size'"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseModelSpec(Replace(kModel, "\"num_layers\": 4,", ""), "x.json");
            }).find("field 'num_layers' is missing"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseModelSpec(Replace(kModel, "\"bf16\"", "\"int8\""), "x.json");
            }).find("param_dtype"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseModelSpec(Replace(kModel, "\"num_layers\": 4", "\"num_layers\": 0"), "x.json");
            }).find("must be in [1"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseModelSpec(Replace(kModel, "\"num_kv_heads\": 2", "\"num_kv_heads\": 3"),
                             "x.json");
            }).find("multiple of num_kv_heads"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseModelSpec(Replace(kModel, "\"adam\"", "\"sgd\""), "x.json");
            }).find("adam"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { ParseModelSpec("{ not json", "x.json"); }).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { LoadModelSpec("/nonexistent/model.json"); }).find("cannot open"),
            std::string::npos);
}

TEST(Specs, ClusterFieldsAndDefaults) {
  const ClusterSpec c = ParseClusterSpec(kCluster, "c.json");
  ASSERT_EQ(c.device_types.size(), 1u);
  EXPECT_EQ(c.device_types[0].count, 4);
  EXPECT_DOUBLE_EQ(c.device_types[0].reserved_gib, 1.0);
  EXPECT_DOUBLE_EQ(c.device_types[0].domain_latency_us, 5.0);
  EXPECT_DOUBLE_EQ(c.device_types[0].achievable_flops(), 50e12);
  EXPECT_DOUBLE_EQ(c.inter_bandwidth_GBps, 10.0);
  EXPECT_EQ(c.total_devices(), 4);
  EXPECT_EQ(c.FindType("A"), 0);
  EXPECT_EQ(c.FindType("B"), -1);
  EXPECT_EQ(c.device_types[0].cpu_threads, 0);  // not given: the environment's
  EXPECT_EQ(ParseClusterSpec(Replace(kCluster, "\"memory_gib\": 16",
                                     "\"memory_gib\": 16, \"cpu_threads\": 3"),
                             "c.json")
                .device_types[0]
                .cpu_threads,
            3);
  EXPECT_EQ(ErrorOf([] {
              ParseClusterSpec(Replace(kCluster, "\"memory_gib\": 16",
                                       "\"memory_gib\": 16, \"cpu_threads\": 0"),
                               "c.json");
            }),
            "cluster spec c.json device_types[0]: field 'cpu_threads' must be in [1, 1024], got 0");
  EXPECT_NE(ErrorOf([] {
              ParseClusterSpec(
                  Replace(kCluster, "\"achievable_fraction\": 0.5", "\"achievable_fraction\": 1.5"),
                  "c.json");
            }).find("achievable_fraction"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              ParseClusterSpec(Replace(kCluster, "\"memory_gib\": 16",
                                       "\"memory_gib\": 16, \"reserved_gib\": 16"),
                               "c.json");
            }).find("reserved_gib"),
            std::string::npos);
}

TEST(Specs, ProfileParsesMilliseconds) {
  const LayerProfile p = ParseProfile(R"({"model": "m", "seq_length": 128, "entries": [
      {"device_type": "A", "tp": 1, "micro_batch": 2, "forward_ms": 4, "backward_ms": 8}]})",
                                      "p.json");
  double f = 0, b = 0;
  ASSERT_TRUE(p.Lookup("A", 1, 2, &f, &b));
  EXPECT_DOUBLE_EQ(f, 0.004);
  EXPECT_DOUBLE_EQ(b, 0.008);
  EXPECT_FALSE(p.Lookup("A", 2, 2, &f, &b));
  EXPECT_EQ(p.seq_length(), 128);
  EXPECT_EQ(p.device_types(), std::vector<std::string>{"A"});
}

TEST(Specs, ShippedExamplesLoad) {
  for (const char* name : {"llama2-7b", "llama2-13b", "tiny-llama"}) {
    const ModelSpec m =
        LoadModelSpec(std::string(MIXCCL_TRAIN_EXAMPLES) + "/models/" + name + ".json");
    EXPECT_EQ(m.name, name);
  }
  for (const char* name : {"h100-16", "h100-a100", "h100-a100-v100"}) {
    const ClusterSpec c =
        LoadClusterSpec(std::string(MIXCCL_TRAIN_EXAMPLES) + "/clusters/" + name + ".json");
    EXPECT_EQ(c.name, name);
  }
  const LayerProfile p =
      LoadProfile(std::string(MIXCCL_TRAIN_EXAMPLES) + "/profiles/llama2-7b-h100-a100.json");
  EXPECT_FALSE(p.empty());
}

}  // namespace
}  // namespace mixccl::train
