#include "transport/ucx/ucx_transport.h"

#include <sched.h>

#include <string>

#include "base/error.h"
#include "base/log.h"
#include "transport/ucx/ucx_connection.h"
#include "transport/ucx/ucx_handshake.h"
#include "transport/ucx/ucx_tag.h"

namespace mixccl {

Result UcxTransport::connect(const TransportSetup& setup, const std::vector<int>& candidates,
                             std::vector<std::unique_ptr<Connection>>* out) {
  const int rank = setup.rank;
  std::vector<std::string> names;
  for (int p : candidates) {
    names.push_back(describePeer(*setup.peers, p));
    if ((*setup.conns)[p].empty())
      return raiseError(mixcclInternalError, "rank %d: no control connection to %s", rank,
                        names.back().c_str());
  }
  // 1. Every rank starts its worker and tells its peers whether that worked, so a rank whose
  //    UCX cannot start fails its peers with a message pointing at it, not with a timeout.
  Result started = UcxWorker::create(rank, setup.nranks, setup.frameBytes, &worker_);
  Result agreed = exchangeUcxStatus(rank, candidates, names, *setup.conns, setup.deadline,
                                    started == mixcclSuccess, "start UCX");
  if (started != mixcclSuccess) return started;
  MIXCCL_CHECK(agreed);
  INFO(kLogInit | kLogNet, "rank %d: UCX worker started (%s, memory types %s, %s, address %zu "
       "bytes)", rank, ucxTlsSetting().c_str(), worker_->memoryTypes().c_str(),
       worker_->segments().c_str(), worker_->address().size());

  // 2. Addresses and keys, over the authenticated control connections only.
  std::vector<uint32_t> keys;
  MIXCCL_CHECK(makeUcxKeys(setup.nranks, &keys));
  std::vector<UcxOffer> offers;
  for (int p : candidates) offers.push_back(UcxOffer{keys[2 * p], keys[2 * p + 1]});
  std::vector<UcxPeerSetup> theirs;
  MIXCCL_CHECK(exchangeUcxSetup(rank, setup.commHash, candidates, names, *setup.conns,
                                setup.deadline, worker_->address(), offers, &theirs));

  // 3. Endpoints; the first connection drives the shared worker (ucx_connection.h).
  std::vector<std::unique_ptr<UcxConnection>> made;
  Result mine = mixcclSuccess;
  for (size_t i = 0; i < candidates.size() && mine == mixcclSuccess; ++i) {
    UcxKeys k;
    k.sendKey = theirs[i].sendKey;
    k.sendByeKey = theirs[i].sendByeKey;
    k.recvKey = offers[i].recvKey;
    k.recvByeKey = offers[i].recvByeKey;
    std::unique_ptr<UcxConnection> c(new UcxConnection(candidates[i], names[i], worker_, k, i == 0));
    mine = c->open(rank, theirs[i].address);
    made.push_back(std::move(c));
  }
  agreed = exchangeUcxStatus(rank, candidates, names, *setup.conns, setup.deadline,
                             mine == mixcclSuccess, "create its UCX endpoint");
  if (mine != mixcclSuccess) return mine;
  MIXCCL_CHECK(agreed);

  // 4. Wire-up (ucx_connection.h, postHello): every pair's ranks are here now, so UCX's
  //    handshakes complete while both sides progress.
  for (std::unique_ptr<UcxConnection>& c : made) c->postHello();
  for (;;) {
    bool done = true;
    for (size_t i = 0; i < made.size(); ++i) {
      std::string why;
      if (made[i]->endpointDead(&why))
        return raiseError(mixcclRemoteError, "rank %d: transport 'ucx': the endpoint to %s "
                          "failed during wire-up: %s (%s)", rank, names[i].c_str(), why.c_str(),
                          ucxTlsSetting().c_str());
      done = done && made[i]->helloDone();
    }
    if (done) break;
    if (setup.deadline.expired()) {
      std::string waiting;
      for (size_t i = 0; i < made.size(); ++i)
        if (!made[i]->helloDone()) waiting += (waiting.empty() ? "" : ", ") + names[i];
      return raiseError(mixcclTimeout, "rank %d: transport 'ucx': no wire-up with %s within the "
                        "timeout (%s)", rank, waiting.c_str(), ucxTlsSetting().c_str());
    }
    if (!worker_->progress()) sched_yield();
  }
  for (size_t i = 0; i < made.size(); ++i) (*out)[candidates[i]] = std::move(made[i]);
  return mixcclSuccess;
}

Result UcxTransport::connectOnFirstUse(const TransportSetup& setup, int peer,
                                       std::unique_ptr<Connection>* out) {
  const int rank = setup.rank;
  const std::vector<int> peers{peer};
  const std::vector<std::string> names{describePeer(*setup.peers, peer)};
  std::shared_ptr<UcxWorker> worker;
  UcxOffer offer;
  Result started;
  {
    std::lock_guard<std::mutex> lock(firstUseMutex_);
    if (!worker_ && workerStarted_ == mixcclSuccess) {
      workerStarted_ = UcxWorker::create(rank, setup.nranks, setup.frameBytes, &worker_);
      if (workerStarted_ == mixcclSuccess)
        INFO(kLogInit | kLogNet, "rank %d: UCX worker started for pairs connected on first use "
             "(%s, memory types %s, %s, address %zu bytes)", rank, ucxTlsSetting().c_str(),
             worker_->memoryTypes().c_str(), worker_->segments().c_str(),
             worker_->address().size());
    }
    started = workerStarted_;
    worker = worker_;
    // Two fresh keys no other pair of this worker receives under.
    for (uint32_t* k : {&offer.recvKey, &offer.recvByeKey}) {
      std::vector<uint32_t> fresh;
      do {
        MIXCCL_CHECK(makeUcxKeys(1, &fresh));
      } while (!keysUsed_.insert(fresh[0]).second);
      *k = fresh[0];
    }
  }
  Result agreed = exchangeUcxStatus(rank, peers, names, *setup.conns, setup.deadline,
                                    started == mixcclSuccess, "start UCX");
  if (started != mixcclSuccess)
    return raiseError(started, "rank %d: transport 'ucx' could not start for %s (%s)", rank,
                      names[0].c_str(), ucxTlsSetting().c_str());
  MIXCCL_CHECK(agreed);
  std::vector<UcxPeerSetup> theirs;
  MIXCCL_CHECK(exchangeUcxSetup(rank, setup.commHash, peers, names, *setup.conns, setup.deadline,
                                worker->address(), {offer}, &theirs));
  UcxKeys k;
  k.sendKey = theirs[0].sendKey;
  k.sendByeKey = theirs[0].sendByeKey;
  k.recvKey = offer.recvKey;
  k.recvByeKey = offer.recvByeKey;
  std::unique_ptr<UcxConnection> c(new UcxConnection(peer, names[0], worker, k, false));
  c->openAtStart(rank, std::move(theirs[0].address));
  *out = std::move(c);
  return mixcclSuccess;
}

}  // namespace mixccl
