#include "p2p_inbox.h"

#include <algorithm>

namespace mixccl_torch {

void PendingRecv::finish(int from) {
  if (!buffer.is_same(tensor)) tensor.copy_(buffer.view(tensor.sizes()));
  if (peer < 0) work->setSourceRank(from);
  work->markDone();
}

void P2PInbox::post(const std::shared_ptr<PendingRecv>& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (r->peer >= 0) named_[{r->peer, r->tag}].push_back(r);
  else anySource_[r->tag].push_back(r);
}

void P2PInbox::dropClaimed(Queue& q) {
  while (!q.empty() && q.front()->claimed.load()) q.pop_front();
}

std::shared_ptr<PendingRecv> P2PInbox::match(int peer, int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Messages of one (peer, tag) are taken in arrival order: behind a kept one, this one waits.
  auto k = kept_.find({peer, tag});
  if (k != kept_.end() && !k->second.empty()) return nullptr;
  for (;;) {
    Queue* named = nullptr;
    Queue* any = nullptr;
    auto n = named_.find({peer, tag});
    if (n != named_.end()) {
      dropClaimed(n->second);
      if (!n->second.empty()) named = &n->second;
    }
    auto a = anySource_.find(tag);
    if (a != anySource_.end()) {
      dropClaimed(a->second);
      if (!a->second.empty()) any = &a->second;
    }
    if (!named && !any) return nullptr;
    // The receive posted first takes it, whether it names the source or not.
    Queue* from = named && (!any || named->front()->order < any->front()->order) ? named : any;
    std::shared_ptr<PendingRecv> r = from->front();
    from->pop_front();
    if (r->claim()) return r;  // else claimed elsewhere since dropClaimed: look again
  }
}

void P2PInbox::keep(int peer, int tag, at::Tensor payload) {
  std::lock_guard<std::mutex> lock(mutex_);
  kept_[{peer, tag}].push_back(Message{nextArrival_++, std::move(payload)});
}

void P2PInbox::unpost(PendingRecv& r) {
  Queue& q = r.peer >= 0 ? named_[{r.peer, r.tag}] : anySource_[r.tag];
  q.erase(std::remove_if(q.begin(), q.end(),
                         [&](const std::shared_ptr<PendingRecv>& p) { return p.get() == &r; }),
          q.end());
}

P2PInbox::Kept P2PInbox::takeKept(PendingRecv& r, at::Tensor* payload, int* from,
                                   size_t* bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::deque<Message>* best = nullptr;
  int bestPeer = -1;
  for (auto& entry : kept_) {
    if (entry.first.second != r.tag || entry.second.empty()) continue;
    if (r.peer >= 0 && entry.first.first != r.peer) continue;
    if (!best || entry.second.front().arrival < best->front().arrival) {
      best = &entry.second;
      bestPeer = entry.first.first;
    }
  }
  if (!best || !r.claim()) return Kept::None;
  unpost(r);
  *from = bestPeer;
  *bytes = best->front().payload.nbytes();
  if (*bytes != r.bytes()) return Kept::Mismatch;
  *payload = std::move(best->front().payload);
  best->pop_front();
  return Kept::Taken;
}

}  // namespace mixccl_torch
