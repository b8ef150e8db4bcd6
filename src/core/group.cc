#include "core/group.h"

#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "core/comm_registry.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<std::unique_ptr<WorkItem>> items;
};
thread_local GroupState tlsGroup;

// Runs each communicator's share; several communicators run concurrently.
Result executeItems(std::vector<std::unique_ptr<WorkItem>>& items) {
  std::vector<Comm*> order;
  std::map<Comm*, std::vector<WorkItem*>> byComm;
  for (auto& w : items) {
    if (!byComm.count(w->comm)) order.push_back(w->comm);
    byComm[w->comm].push_back(w.get());
  }
  auto runOne = [&](Comm* comm, std::string* err) {
    setLogRank(comm->rank);
    Result r = executeOnComm(comm, byComm[comm]);
    if (r != mixcclSuccess) {
      *err = threadLastError();
      comm->setLastError(*err);
    }
    return r;
  };
  std::vector<Result> results(order.size(), mixcclSuccess);
  std::vector<std::string> errors(order.size());
  if (order.size() == 1) {
    results[0] = runOne(order[0], &errors[0]);
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < order.size(); ++i)
      threads.emplace_back([&, i] { results[i] = runOne(order[i], &errors[i]); });
    for (auto& t : threads) t.join();
  }
  for (size_t i = 0; i < order.size(); ++i)
    if (results[i] != mixcclSuccess) return adoptError(results[i], errors[i]);
  return mixcclSuccess;
}

void releaseItems(std::vector<std::unique_ptr<WorkItem>>& items) {
  for (auto& w : items) releaseComm(w->comm);
  items.clear();
}

}  // namespace

bool groupOpen() { return tlsGroup.depth > 0; }

Result groupStart() {
  ++tlsGroup.depth;
  return mixcclSuccess;
}

Result groupEnd() {
  if (tlsGroup.depth == 0)
    return raiseError(mixcclInvalidUsage, "mixcclGroupEnd called without mixcclGroupStart");
  if (--tlsGroup.depth > 0) return mixcclSuccess;
  std::vector<std::unique_ptr<WorkItem>> items;
  items.swap(tlsGroup.items);
  Result r = items.empty() ? mixcclSuccess : executeItems(items);
  releaseItems(items);
  return r;
}

Result submitWork(WorkItem item) {
  MIXCCL_CHECK(checkCommReady(item.name, item.comm));
  if (tlsGroup.depth == 0) {
    // Runs at once on this thread; the caller's reference keeps the communicator alive.
    setLogRank(item.comm->rank);
    if (item.kind == WorkItem::Kind::Collective) return executeCollective(item.comm, &item);
    return executeOnComm(item.comm, {&item});
  }
  item.comm->refs.fetch_add(1);  // the group's, until its end has run the item
  tlsGroup.items.emplace_back(new WorkItem(std::move(item)));
  return mixcclSuccess;
}

}  // namespace mixccl
