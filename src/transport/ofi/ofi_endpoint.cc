#include "transport/ofi/ofi_endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <sys/mman.h>

#include <cstring>

#include <algorithm>
#include <chrono>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/ofi/ofi_library.h"

namespace mixccl {

bool waitFdHearsPeers(const fi_info* info) {
  // The core provider comes first in the list ("tcp;ofi_rxm": tcp carries the bytes, rxm
  // layers reliable datagrams over it).
  std::string p = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
  std::string core = p.substr(0, p.find(';'));
  return core == "tcp" || core == "verbs" || core == "sockets" || core == "net";
}

OfiEndpoint::~OfiEndpoint() {
  if (!closed_) closeGracefully(200);
}

Result OfiEndpoint::open(OfiChoice choice, int rank, const std::string& shmName) {
  choice_ = std::move(choice);
  rank_ = rank;
  fi_info* info = choice_.info.get();
  provider_ = describeOfiInfo(info);
  auto fail = [&](const char* step, int rc) {
    closeAll();
    return raiseError(mixcclSystemError, "rank %d: libfabric provider %s: %s failed: %s", rank,
                      provider_.c_str(), step, ofiStrerror(rc < 0 ? -rc : rc));
  };
  int rc = ofiFabric(info->fabric_attr, &fabric_, nullptr);
  if (rc != 0) return fail("fi_fabric", rc);
  rc = fi_domain(fabric_, info, &domain_, nullptr);
  if (rc != 0) return fail("fi_domain", rc);

  // A wait fd lets the engine sleep in epoll with the sockets and control connections;
  // without one (some providers refuse FI_WAIT_FD, others never signal a peer's message on it)
  // the connection polls the queue instead (ofi_connection.h).
  fi_cq_attr cqAttr{};
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.wait_obj = FI_WAIT_FD;
  rc = waitFdHearsPeers(info) ? fi_cq_open(domain_, &cqAttr, &cq_, nullptr) : -FI_ENOSYS;
  if (rc != 0) {
    TRACE(kLogInit | kLogNet, "libfabric provider %s: no completion queue with a wait fd (%s): "
          "polling", provider_.c_str(), ofiStrerror(-rc));
    cqAttr.wait_obj = FI_WAIT_NONE;
    rc = fi_cq_open(domain_, &cqAttr, &cq_, nullptr);
    if (rc != 0) return fail("fi_cq_open", rc);
  } else {
    int fd = -1;
    rc = fi_control(&cq_->fid, FI_GETWAIT, &fd);
    if (rc == 0 && fd >= 0) {
      waitFd_ = fd;
    } else {
      // The queue has a wait object but will not hand it out: reopen it without one, since a
      // queue with a wait object may only be waited on through fi_cq_sread otherwise.
      fi_close(&cq_->fid);
      cq_ = nullptr;
      cqAttr.wait_obj = FI_WAIT_NONE;
      rc = fi_cq_open(domain_, &cqAttr, &cq_, nullptr);
      if (rc != 0) return fail("fi_cq_open", rc);
    }
  }
  fi_av_attr avAttr{};
  avAttr.type = info->domain_attr->av_type;
  rc = fi_av_open(domain_, &avAttr, &av_, nullptr);
  if (rc != 0) return fail("fi_av_open", rc);
  rc = fi_endpoint(domain_, info, &ep_, nullptr);
  if (rc != 0) return fail("fi_endpoint", rc);
  rc = fi_ep_bind(ep_, &av_->fid, 0);
  if (rc != 0) return fail("fi_ep_bind(av)", rc);
  rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) return fail("fi_ep_bind(cq)", rc);
  const char* prov = info->fabric_attr->prov_name;
  if (!shmName.empty() && prov && strncmp(prov, "shm", 3) == 0) {
    // Before fi_enable, which creates the region under the endpoint's name: a name of our
    // choosing (communicator and rank) instead of the provider's pid-based one, so that it is
    // unique per communicator and recognisably mixccl's.
    rc = fi_setname(&ep_->fid, const_cast<char*>(shmName.c_str()), shmName.size() + 1);
    if (rc != 0) return fail("fi_setname", rc);
    shmName_ = shmName;
    shmNamePrefix_ = shmName.substr(0, shmName.rfind('-') + 1);
  }
  rc = fi_enable(ep_);
  if (rc != 0) return fail("fi_enable", rc);
  char name[256];
  size_t len = sizeof(name);
  rc = fi_getname(&ep_->fid, name, &len);
  if (rc != 0) return fail("fi_getname", rc);
  address_.assign(name, len);
  maxMessage_ = info->ep_attr->max_msg_size;
  mr_.setup(domain_, ep_, info->domain_attr->mr_mode);
  return mixcclSuccess;
}

void OfiEndpoint::unlinkShmName() {
  if (shmName_.empty()) return;
  // The provider names the file after the endpoint name, with a leading slash for shm_open.
  shm_unlink(("/" + shmName_).c_str());
  shmName_.clear();
}

void OfiEndpoint::unlinkPeerShmName(int peer) const {
  if (shmNamePrefix_.empty()) return;
  // Already gone (the peer removed it, or init's handshake did): nothing to do.
  shm_unlink(("/" + shmNamePrefix_ + std::to_string(peer)).c_str());
}

bool OfiEndpoint::insert(const std::string& address, fi_addr_t* out, std::string* error) {
  int n = fi_av_insert(av_, address.data(), 1, out, 0, nullptr);
  if (n == 1) return true;
  *error = std::string("fi_av_insert: ") + (n < 0 ? ofiStrerror(-n) : "address rejected");
  return false;
}

OfiOp* OfiEndpoint::newOp(OfiOpOwner* owner) {
  OfiOp* op = new OfiOp();
  op->owner = owner;
  ops_.insert(op);
  return op;
}

void OfiEndpoint::freeOp(OfiOp* op) {
  if (ops_.erase(op) == 0) return;
  mr_.release(op->mr);
  delete op;
}

void OfiEndpoint::removeOwner(OfiOpOwner* o) {
  owners_.erase(std::remove(owners_.begin(), owners_.end(), o), owners_.end());
  for (OfiOp* op : ops_)
    if (op->owner == o) op->owner = nullptr;
}

int OfiEndpoint::progress() {
  if (closed_) return 0;
  int handled = 0;
  // Bounded, so one busy queue cannot keep the engine from the control connections.
  for (int round = 0; round < 64 && !closed_; ++round) {
    fi_cq_tagged_entry entries[16];
    ssize_t n = fi_cq_read(cq_, entries, 16);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        OfiOp* op = static_cast<OfiOp*>(entries[i].op_context);
        if (!op || !ops_.count(op)) continue;  // not ours (cannot happen) or already dropped
        if (op->owner)
          op->owner->opDone(op, op->send ? op->len : entries[i].len,
                            (entries[i].flags & FI_REMOTE_CQ_DATA) ? entries[i].data : 0);
        else
          freeOp(op);
        if (closed_) return handled;
      }
      handled += (int)n;
      continue;
    }
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq_, &err, 0) <= 0) break;
      char buf[256] = "";
      const char* text = fi_cq_strerror(cq_, err.prov_errno, err.err_data, buf, sizeof(buf));
      std::string what = ofiStrerror(err.err < 0 ? -err.err : err.err);
      if (text && *text && what != text) what += std::string(" (") + text + ")";
      OfiOp* op = static_cast<OfiOp*>(err.op_context);
      ++handled;
      if (!op || !ops_.count(op)) continue;
      if (!op->owner && orphanError_.empty()) orphanError_ = what;
      if (op->owner)
        op->owner->opFailed(op, err, what);
      else
        freeOp(op);
      continue;
    }
    if (n != -FI_EAGAIN) {
      static bool logged = false;  // a broken queue repeats itself; the deadline ends the wait
      if (!logged) WARN(kLogNet, "rank %d: libfabric provider %s: fi_cq_read: %s", rank_,
                        provider_.c_str(), ofiStrerror((int)-n));
      logged = true;
    }
    break;
  }
  std::vector<OfiOpOwner*> owners = owners_;
  for (OfiOpOwner* o : owners)
    if (!closed_) o->retryBacklog();
  return handled;
}

bool OfiEndpoint::postOrphan(bool send, fi_addr_t addr, uint64_t tag, const Deadline& deadline,
                             std::string* error) {
  for (;;) {
    OfiOp* op = newOp(nullptr);
    op->send = send;
    op->tag = tag;
    op->len = sizeof(op->scratch);
    void* desc = nullptr;
    if (!mr_.acquire(&op->scratch, sizeof(op->scratch), &desc, &op->mr, error)) {
      freeOp(op);
      return false;
    }
    ssize_t rc = send ? fi_tsend(ep_, &op->scratch, sizeof(op->scratch), desc, addr, tag, &op->context)
                      : fi_trecv(ep_, &op->scratch, sizeof(op->scratch), desc,
                                 choice_.directedRecv ? addr : FI_ADDR_UNSPEC, tag, 0, &op->context);
    if (rc == 0) return true;
    freeOp(op);
    if (rc != -FI_EAGAIN || deadline.expired()) {
      *error = std::string(send ? "fi_tsend" : "fi_trecv") + ": " + ofiStrerror((int)-rc);
      return false;
    }
    progress();
  }
}

bool OfiEndpoint::tagInFlight(uint64_t tag) const {
  for (const OfiOp* op : ops_)
    if (op->tag == tag) return true;
  return false;
}

bool OfiEndpoint::tryWait() {
  if (closed_ || waitFd_ < 0) return true;
  fid* f = &cq_->fid;
  return fi_trywait(fabric_, &f, 1) == FI_SUCCESS;
}

void OfiEndpoint::abandon() {
  if (closed_) return;
  // fi_cancel asks the provider to drop each posted operation; closing the endpoint after
  // guarantees it touches none of their buffers any more, whether or not the cancel took.
  // Owners have already forgotten their requests: completions only free the records.
  for (OfiOp* op : ops_) fi_cancel(&ep_->fid, &op->context);
  // The cancellations are read back first (bounded): closing the endpoint while they were still
  // queued crashed inside libfabric's fi_close over tcp;ofi_rxm (1 abort in 25, under load).
  auto end = Clock::now() + std::chrono::milliseconds(200);
  while (!ops_.empty() && Clock::now() < end) {
    fi_cq_tagged_entry entries[16];
    ssize_t n = fi_cq_read(cq_, entries, 16);
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i) freeOp(static_cast<OfiOp*>(entries[i].op_context));
      continue;
    }
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(cq_, &err, 0) <= 0) break;
      freeOp(static_cast<OfiOp*>(err.op_context));
      continue;
    }
    if (n != -FI_EAGAIN) break;
    sched_yield();
  }
  closeAll();
}

void OfiEndpoint::closeGracefully(int maxMs) {
  if (closed_) return;
  auto end = Clock::now() + std::chrono::milliseconds(maxMs);
  auto sendsLeft = [&] {
    for (OfiOp* op : ops_)
      if (op->send) return true;
    return false;
  };
  while (sendsLeft() && Clock::now() < end) {
    progress();
    sched_yield();
  }
  abandon();
}

void OfiEndpoint::closeAll() {
  // The endpoint first: once it is closed no operation can touch memory, so the
  // registrations, queues and records can go.
  if (ep_) fi_close(&ep_->fid);
  ep_ = nullptr;
  mr_.clear();
  for (OfiOp* op : ops_) delete op;
  ops_.clear();
  if (av_) fi_close(&av_->fid);
  av_ = nullptr;
  if (cq_) fi_close(&cq_->fid);
  cq_ = nullptr;
  waitFd_ = -1;
  if (domain_) fi_close(&domain_->fid);
  domain_ = nullptr;
  if (fabric_) fi_close(&fabric_->fid);
  fabric_ = nullptr;
  closed_ = true;
}

}  // namespace mixccl
