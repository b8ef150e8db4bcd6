#include "mixccl/train/profile.h"

#include <algorithm>

#include "json_fields.h"
#include "mixccl/train/spec_error.h"

namespace mixccl::train {

void LayerProfile::Add(const std::string& device_type, int tp, const ProfilePoint& point,
                       ProfilePart part) {
  std::vector<ProfilePoint>& points = table_[{part, device_type, tp}];
  auto it = std::lower_bound(points.begin(), points.end(), point.micro_batch,
                             [](const ProfilePoint& p, int mb) { return p.micro_batch < mb; });
  if (it != points.end() && it->micro_batch == point.micro_batch) {
    *it = point;
  } else {
    points.insert(it, point);
  }
}

bool LayerProfile::Lookup(const std::string& device_type, int tp, int micro_batch,
                          double* forward_s, double* backward_s, ProfilePart part) const {
  auto found = table_.find({part, device_type, tp});
  if (found == table_.end()) return false;
  const std::vector<ProfilePoint>& p = found->second;
  const double mb = micro_batch;
  if (micro_batch <= p.front().micro_batch || p.size() == 1 ||
      micro_batch >= p.back().micro_batch) {
    // Proportional scaling from the nearest end (exact at the measured point itself); a pass's
    // or a message's fixed cost does not grow with the sequences, so it stays the nearest one.
    const ProfilePoint& ref = micro_batch <= p.front().micro_batch ? p.front() : p.back();
    const bool fixed = part == ProfilePart::kPass || part == ProfilePart::kMessage;
    const double scale = fixed ? 1.0 : mb / ref.micro_batch;
    *forward_s = ref.forward_s * scale;
    *backward_s = ref.backward_s * scale;
    return true;
  }
  auto hi = std::lower_bound(p.begin(), p.end(), micro_batch,
                             [](const ProfilePoint& q, int m) { return q.micro_batch < m; });
  auto lo = hi - 1;
  const double w = (mb - lo->micro_batch) / (hi->micro_batch - lo->micro_batch);
  *forward_s = lo->forward_s + w * (hi->forward_s - lo->forward_s);
  *backward_s = lo->backward_s + w * (hi->backward_s - lo->backward_s);
  return true;
}

void LayerProfile::AddUpdate(const std::string& device_type, double parameters, double seconds) {
  update_[device_type] = seconds / parameters;
}

bool LayerProfile::UpdateSecondsPerParameter(const std::string& device_type,
                                             double* seconds) const {
  auto found = update_.find(device_type);
  if (found == update_.end()) return false;
  *seconds = found->second;
  return true;
}

std::vector<std::string> LayerProfile::device_types() const {
  std::vector<std::string> out;
  for (const auto& entry : table_) {
    const std::string& type = std::get<1>(entry.first);
    if (std::find(out.begin(), out.end(), type) == out.end()) out.push_back(type);
  }
  for (const auto& entry : update_) {
    if (std::find(out.begin(), out.end(), entry.first) == out.end()) out.push_back(entry.first);
  }
  return out;
}

LayerProfile ParseProfile(const std::string& json_text, const std::string& origin) {
  nlohmann::json doc = detail::ParseJson(json_text, origin);
  const std::string where = "profile " + origin;
  detail::FieldReader r(doc, where);
  r.RejectUnknown({"model", "seq_length", "entries"});
  LayerProfile profile;
  profile.set_model(r.StringOr("model", ""));
  profile.set_seq_length(r.IntOr("seq_length", 0, 1, 1 << 24));
  const nlohmann::json& entries = r.Array("entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    detail::FieldReader e(entries[i], where + " entries[" + std::to_string(i) + "]");
    const std::string part = e.StringOr("part", "layer");
    std::string type = e.String("device_type");
    if (part == "update") {
      // {"device_type", "part": "update", "parameters": N, "update_ms": X}: per step, not per
      // micro-batch, so neither a micro-batch nor forward and backward times.
      e.RejectUnknown({"device_type", "part", "parameters", "update_ms"});
      profile.AddUpdate(type, e.Number("parameters", 1.0, 1e15),
                        e.Number("update_ms", 0.0, 1e12) * 1e-3);
      continue;
    }
    e.RejectUnknown({"device_type", "tp", "micro_batch", "forward_ms", "backward_ms", "part",
                     "activation_bytes"});
    ProfilePoint p;
    int tp = e.Int("tp", 1, 1 << 16);
    p.micro_batch = e.Int("micro_batch", 1, 1 << 24);
    p.forward_s = e.Number("forward_ms", 1e-9, 1e12) * 1e-3;
    p.backward_s = e.Number("backward_ms", 1e-9, 1e12) * 1e-3;
    p.activation_bytes = e.NumberOr("activation_bytes", 0.0, 0.0, 1e18);
    ProfilePart kind = ProfilePart::kLayer;
    if (part == "embedding") {
      kind = ProfilePart::kEmbedding;
    } else if (part == "head") {
      kind = ProfilePart::kHead;
    } else if (part == "pass") {
      kind = ProfilePart::kPass;
    } else if (part == "message") {
      kind = ProfilePart::kMessage;
    } else if (part != "layer") {
      throw SpecError(e.where() +
                      ": 'part' must be \"layer\", \"embedding\", \"head\", \"pass\", "
                      "\"message\" or \"update\", not \"" + part + "\"");
    }
    profile.Add(type, tp, p, kind);
  }
  return profile;
}

LayerProfile LoadProfile(const std::string& path) {
  return ParseProfile(detail::ReadTextFile(path), path);
}

}  // namespace mixccl::train
