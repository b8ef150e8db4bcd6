// A communication call that failed because a peer did (mixcclRemoteError: a rank failed, or
// another rank gave the communicator up) or did not answer in time (mixcclTimeout). It is what
// a job that survives lost ranks (--survive) recovers from; any other failure stays a
// std::runtime_error and ends the run.
#pragma once

#include <stdexcept>
#include <string>

namespace mixccl::train {

class CommFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mixccl::train
