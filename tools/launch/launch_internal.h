// Helpers shared by the two halves of mixccl_launch (detection and communicator init).
#ifndef MIXCCL_LAUNCH_INTERNAL_H_
#define MIXCCL_LAUNCH_INTERNAL_H_

#include <string>

namespace mixccl_launch {

void setError(const std::string& msg);
const std::string& lastError();

// Reads a decimal integer >= minValue from the environment. *present says whether the variable is
// set (non-empty). Returns false (and sets the error) when it is set but not a valid number.
bool parseEnvInt(const char* name, int minValue, int* out, bool* present);

// "host:port" with a numeric port in 1..65535 (host may be "[v6addr]").
bool validHostPort(const std::string& s);

}  // namespace mixccl_launch

#endif  // MIXCCL_LAUNCH_INTERNAL_H_
