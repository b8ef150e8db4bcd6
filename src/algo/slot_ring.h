// A small ring of chunk-sized scratch slots for pipelined algorithms: a slot is handed out
// again only after the send that last read it has finished.
#pragma once

#include <memory>
#include <vector>

#include "algo/transfers.h"

namespace mixccl {

class SlotRing {
 public:
  SlotRing(size_t slots, size_t slotBytes)
      : slotBytes_(slotBytes), data_(new char[slots * slotBytes]), lastSend_(slots) {}

  // The slot for unit u, once the send that used it before has left.
  Result acquire(Transfers& t, size_t u, char** slot) {
    size_t i = u % lastSend_.size();
    MIXCCL_CHECK(t.wait(lastSend_[i]));
    lastSend_[i] = Transfer();
    *slot = data_.get() + i * slotBytes_;
    return mixcclSuccess;
  }
  void releaseAfter(size_t u, Transfer send) { lastSend_[u % lastSend_.size()] = send; }

 private:
  size_t slotBytes_;
  std::unique_ptr<char[]> data_;  // uninitialized: every slot is written before it is read
  std::vector<Transfer> lastSend_;
};

}  // namespace mixccl
