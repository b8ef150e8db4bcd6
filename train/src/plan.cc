#include "mixccl/train/plan.h"

namespace mixccl::train {

int GroupTemplate::num_stages() const {
  int p = 0;
  for (int s : stages) p += s;
  return p;
}

int GroupTemplate::num_devices() const {
  int n = 0;
  for (size_t i = 0; i < types.size(); ++i) n += stages[i] * tp[i];
  return n * dp;
}

int GroupTemplate::block_of_stage(int j) const {
  for (size_t i = 0; i < stages.size(); ++i) {
    if (j < stages[i]) return static_cast<int>(i);
    j -= stages[i];
  }
  return -1;
}

int GroupTemplate::stage_local_index(int j) const {
  for (size_t i = 0; i < stages.size(); ++i) {
    if (j < stages[i]) return j;
    j -= stages[i];
  }
  return -1;
}

int GroupTemplate::stage_type(int j) const { return types[block_of_stage(j)]; }
int GroupTemplate::stage_tp(int j) const { return tp[block_of_stage(j)]; }

int Structure::replicas() const {
  int r = 0;
  for (const GroupTemplate& g : groups) r += g.dp;
  return r;
}

int Structure::num_devices() const {
  int n = 0;
  for (const GroupTemplate& g : groups) n += g.num_devices();
  return n;
}

}  // namespace mixccl::train
