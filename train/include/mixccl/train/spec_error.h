// Error raised for invalid input files (model, cluster, profile specs).
#pragma once

#include <stdexcept>
#include <string>

namespace mixccl::train {

// Thrown by the spec loaders with a message that names the file and the field, so the CLI can
// print it verbatim.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mixccl::train
