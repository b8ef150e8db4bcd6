// Strict reading of JSON spec objects with error messages that name the file and the field.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace mixccl::train::detail {

std::string ReadTextFile(const std::string& path);
// Parses `text`; throws SpecError naming `origin` on a syntax error.
nlohmann::json ParseJson(const std::string& text, const std::string& origin);

// A JSON object being read; `where` is e.g. "model spec llama.json".
class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string where);

  // Fails on any key outside `known` ("comment" is always allowed) so a typo never silently
  // falls back to a default.
  void RejectUnknown(std::initializer_list<const char*> known) const;

  bool Has(const char* key) const;
  int Int(const char* key, long min, long max) const;
  int IntOr(const char* key, int fallback, long min, long max) const;
  double Number(const char* key, double min, double max) const;
  double NumberOr(const char* key, double fallback, double min, double max) const;
  bool BoolOr(const char* key, bool fallback) const;
  std::string String(const char* key) const;
  std::string StringOr(const char* key, const std::string& fallback) const;
  const nlohmann::json& Array(const char* key) const;
  const nlohmann::json& Object(const char* key) const;
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json& Get(const char* key) const;
  [[noreturn]] void Fail(const char* key, const std::string& problem) const;

  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace mixccl::train::detail
