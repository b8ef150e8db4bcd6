// Parsing of one environment value, apart from reading it, so that every rule is unit-testable.
// A value that does not parse gives the default and a warning text that names the variable, the
// value, what was expected and the value used instead ("" when the value was fine or unset).
#pragma once

#include <initializer_list>
#include <string>

namespace mixccl {

// Decimal integer in [min, max] (no octal or hex: "010" is ten, as a user means it).
long long parseEnvInt(const char* var, const char* value, long long dflt, long long min,
                      long long max, std::string* warning);

// 0/1, and (any case) true/false, yes/no, on/off.
bool parseEnvBool(const char* var, const char* value, bool dflt, std::string* warning);

// One of choices, compared without regard to case (NCCL accepts MIXCCL_DEBUG=info, so do we);
// returns the choice's own spelling, so the code reading it compares exact strings.
std::string parseEnvChoice(const char* var, const char* value,
                           std::initializer_list<const char*> choices, const char* dflt,
                           std::string* warning);

// a == b ignoring ASCII case.
bool equalsIgnoreCase(const std::string& a, const std::string& b);

}  // namespace mixccl
