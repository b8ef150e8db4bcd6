#include "json_fields.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "mixccl/train/spec_error.h"

namespace mixccl::train::detail {

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError("cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw SpecError("cannot read '" + path + "'");
  return text.str();
}

nlohmann::json ParseJson(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw SpecError(origin + ": invalid JSON (" + e.what() + ")");
  }
}

FieldReader::FieldReader(const nlohmann::json& object, std::string where)
    : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) throw SpecError(where_ + ": expected a JSON object");
}

void FieldReader::RejectUnknown(std::initializer_list<const char*> known) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (it.key() == "comment") continue;
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) throw SpecError(where_ + ": unknown field '" + it.key() + "'");
  }
}

bool FieldReader::Has(const char* key) const { return object_.contains(key); }

const nlohmann::json& FieldReader::Get(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end()) Fail(key, "is missing");
  return *it;
}

void FieldReader::Fail(const char* key, const std::string& problem) const {
  throw SpecError(where_ + ": field '" + key + "' " + problem);
}

int FieldReader::Int(const char* key, long min, long max) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_number_integer()) Fail(key, "must be an integer");
  long long x = v.get<long long>();
  if (x < min || x > max) {
    Fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  std::to_string(x));
  }
  return static_cast<int>(x);
}

int FieldReader::IntOr(const char* key, int fallback, long min, long max) const {
  return Has(key) ? Int(key, min, max) : fallback;
}

double FieldReader::Number(const char* key, double min, double max) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_number()) Fail(key, "must be a number");
  double x = v.get<double>();
  if (!std::isfinite(x) || x < min || x > max) {
    std::ostringstream msg;
    msg << "must be in [" << min << ", " << max << "], got " << x;
    Fail(key, msg.str());
  }
  return x;
}

double FieldReader::NumberOr(const char* key, double fallback, double min, double max) const {
  return Has(key) ? Number(key, min, max) : fallback;
}

bool FieldReader::BoolOr(const char* key, bool fallback) const {
  if (!Has(key)) return fallback;
  const nlohmann::json& v = Get(key);
  if (!v.is_boolean()) Fail(key, "must be true or false");
  return v.get<bool>();
}

std::string FieldReader::String(const char* key) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_string()) Fail(key, "must be a string");
  return v.get<std::string>();
}

std::string FieldReader::StringOr(const char* key, const std::string& fallback) const {
  return Has(key) ? String(key) : fallback;
}

const nlohmann::json& FieldReader::Array(const char* key) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_array()) Fail(key, "must be an array");
  return v;
}

const nlohmann::json& FieldReader::Object(const char* key) const {
  const nlohmann::json& v = Get(key);
  if (!v.is_object()) Fail(key, "must be an object");
  return v;
}

}  // namespace mixccl::train::detail
