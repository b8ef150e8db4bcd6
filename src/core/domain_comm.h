// A rank's membership in its domain's native communicator (the adaptor library's own), made at
// init for domains whose adaptor has a native library, and the init/teardown around it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algo/domain_coll.h"
#include "algo/native_pairwise.h"
#include "base/clock.h"
#include "topology/domains.h"
#include "base/result.h"
#include "adaptors/adaptor_table.h"

struct mixcclComm;

namespace mixccl {

struct Adaptor;

class DomainComm {
 public:
  DomainComm(const Adaptor& adaptor, std::vector<int> members, int index);
  ~DomainComm();  // commDestroy (or nothing after abort)
  DomainComm(const DomainComm&) = delete;
  DomainComm& operator=(const DomainComm&) = delete;

  // Forms the native communicator: domain rank 0 gets the library's unique id, mixccl hands
  // it to the others, every member calls commInitRank. Collective over the domain.
  Result init(mixcclComm* comm, int device);
  void abort();  // any thread
  // The native library's asynchronous error (the table's commGetAsyncError), mixcclSuccess
  // while there is none or the table has no such entry; *why says what failed. Any thread.
  Result asyncError(std::string* why) const;

  const AdaptorTable& table() const;
  void* native() const { return native_; }
  const std::vector<int>& members() const { return members_; }
  int index() const { return index_; }
  // Device memory the native paths borrow (native_pairwise.h); nullptr on host memory.
  NativeScratch* scratch() const { return scratch_.get(); }

 private:
  friend struct DomainServices;
  // mixccl's own collectives over the domain's ranks, for forming the native communicator.
  HostDomainColl onMembers() const;

  const Adaptor& adaptor_;
  std::vector<int> members_;
  int index_;
  void* native_ = nullptr;
  bool aborted_ = false;
  mixcclComm* comm_ = nullptr;
  mixcclAdaptorServices_t services_{};
  Deadline initDeadline_{Clock::now()};
  std::unique_ptr<NativeScratch> scratch_;
};

// Resolves and loads the rank's adaptor (config, else detection) and its domain color
// (MIXCCL_DOMAIN_SPLIT); before rendezvous, so the peer table carries both.
Result chooseAdaptor(mixcclComm* comm, int* color);

// After the transport is up: builds the domain map, logs it, and forms the native
// communicator of this rank's domain when its adaptor has one.
Result setupDomains(mixcclComm* comm);

}  // namespace mixccl
