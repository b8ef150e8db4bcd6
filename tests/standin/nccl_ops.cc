// The stand-in NCCL-API library's collectives and point-to-point transfers, executed by each
// rank on its stream's worker over the communicator's shared segment.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fault_plan.h"
#include "nccl_comm.h"
#include "nccl_reduce.h"

namespace standin {
namespace {

std::string describe(const CallDesc& d) {
  return std::string(opKindName(static_cast<OpKind>(d.kind))) + "(count " + std::to_string(d.count) +
         ", datatype " + std::to_string(d.type) + ", op " + std::to_string(d.op) + ", root " +
         std::to_string(d.root) + ")";
}

// One collective, chunk by chunk: in each round every rank writes its part into its slot,
// all meet at the barrier, then each reads what it needs from the others' slots.
class Collective {
 public:
  Collective(CommState& c, const Op& op) : c_(c), s_(*c.segment), op_(op), es_(typeBytes(op.type)) {}

  ncclResult_t run(std::string* why) {
    const CallDesc d{++c_.collectives, static_cast<int32_t>(op_.kind), op_.type, op_.op, op_.root, op_.count};
    if (op_.count == 0) return ncclSuccess;  // as NCCL: nothing moves, nobody waits
    desc_ = d;
    const int n = s_.nranks(), me = s_.rank();
    const size_t half = kSlotHalfBytes / es_;
    switch (op_.kind) {
      case OpKind::AllReduce:
      case OpKind::Reduce:
        return chunks(half, why, [&](size_t off, size_t m, char* mine) {
          std::memcpy(mine, op_.send + off * es_, m * es_);
        }, [&](size_t off, size_t m, uint64_t rd) {
          if (op_.kind == OpKind::Reduce && me != op_.root) return;
          reduceRanks(op_.recv + off * es_, 0, m, rd);
        });
      case OpKind::Broadcast:
        return chunks(half, why, [&](size_t off, size_t m, char* mine) {
          if (me == op_.root) std::memcpy(mine, op_.send + off * es_, m * es_);
        }, [&](size_t off, size_t m, uint64_t rd) {
          std::memcpy(op_.recv + off * es_, s_.slot(op_.root, rd), m * es_);
        });
      case OpKind::AllGather:
        return chunks(half, why, [&](size_t off, size_t m, char* mine) {
          std::memcpy(mine, op_.send + off * es_, m * es_);
        }, [&](size_t off, size_t m, uint64_t rd) {
          for (int r = 0; r < n; ++r)
            std::memcpy(op_.recv + (r * op_.count + off) * es_, s_.slot(r, rd), m * es_);
        });
      case OpKind::ReduceScatter:
        return chunks(half / n, why, [&](size_t off, size_t m, char* mine) {
          for (int b = 0; b < n; ++b)
            std::memcpy(mine + b * m * es_, op_.send + (b * op_.count + off) * es_, m * es_);
        }, [&](size_t off, size_t m, uint64_t rd) {
          reduceRanks(op_.recv + off * es_, me * m * es_, m, rd);
        });
      default:
        *why = "not a collective";
        return ncclInternalError;
    }
  }

 private:
  template <class Write, class Read>
  ncclResult_t chunks(size_t per, std::string* why, Write write, Read read) {
    bool first = true;
    for (size_t off = 0; off < op_.count; off += per) {
      const size_t m = std::min(per, op_.count - off);
      const uint64_t rd = s_.round();
      if (first) s_.desc(s_.rank(), desc_.seq) = desc_;
      write(off, m, s_.slot(s_.rank(), rd));
      if (ncclResult_t r = s_.barrier(why)) return r;
      if (first) {
        // Every rank compares every descriptor, so all of them refuse a mismatched call.
        for (int r = 0; r < s_.nranks(); ++r) {
          if (!(s_.desc(r, desc_.seq) == desc_)) {
            *why = "rank " + std::to_string(s_.rank()) + " called " + describe(desc_) + " as call " +
                   std::to_string(desc_.seq) + ", rank " + std::to_string(r) + " called " +
                   describe(s_.desc(r, desc_.seq)) + " as call " + std::to_string(s_.desc(r, desc_.seq).seq);
            return ncclInvalidUsage;
          }
        }
        first = false;
      }
      read(off, m, rd);
    }
    return ncclSuccess;
  }

  // out = slot(0) op slot(1) op ... in rank order (the same bits on every rank), at `at` bytes
  // into each slot; Avg divides once at the end.
  void reduceRanks(char* out, size_t at, size_t m, uint64_t rd) {
    const ncclRedOp_t op = op_.op == ncclAvg ? ncclSum : op_.op;
    std::memcpy(out, s_.slot(0, rd) + at, m * es_);
    for (int r = 1; r < s_.nranks(); ++r) reduceInto(out, out, s_.slot(r, rd) + at, m, op_.type, op);
    if (op_.op == ncclAvg) divideBy(out, m, op_.type, s_.nranks());
  }

  CommState& c_;
  Segment& s_;
  const Op& op_;
  const size_t es_;
  CallDesc desc_{};
};

// Sends and receives progress together (a group's ring of sends and receives cannot
// deadlock); messages to one peer go in call order.
ncclResult_t runPointToPoint(Segment& s, const std::vector<Op>& ops, std::string* why) {
  std::vector<Segment::Transfer> sends, recvs;
  for (const Op& o : ops) {
    const uint64_t bytes = o.count * typeBytes(o.type);
    if (o.kind == OpKind::Send) sends.push_back({o.root, const_cast<char*>(o.send), bytes});
    if (o.kind == OpKind::Recv) recvs.push_back({o.root, o.recv, bytes});
  }
  double deadline = Segment::now() + s.timeoutS();
  std::vector<char> busy(static_cast<size_t>(s.nranks()));
  for (;;) {
    const uint32_t seen = s.doorbell();
    bool moved = false, pending = false;
    std::fill(busy.begin(), busy.end(), 0);
    for (auto& t : sends) {
      if (t.finished() || busy[t.peer]) continue;
      busy[t.peer] = 1;
      s.sendSome(&t, &moved);
      pending = pending || !t.finished();
    }
    std::fill(busy.begin(), busy.end(), 0);
    for (auto& t : recvs) {
      if (t.finished() || busy[t.peer]) continue;
      busy[t.peer] = 1;
      if (ncclResult_t r = s.recvSome(&t, &moved, why)) return r;
      pending = pending || !t.finished();
    }
    if (!pending) {
      bool all = std::all_of(sends.begin(), sends.end(), [](auto& t) { return t.finished(); }) &&
                 std::all_of(recvs.begin(), recvs.end(), [](auto& t) { return t.finished(); });
      if (all) return ncclSuccess;
      continue;  // the next transfer to the same peer starts now
    }
    if (moved) {
      deadline = Segment::now() + s.timeoutS();  // bounded while nothing moves, not in total
      continue;
    }
    if (ncclResult_t r = s.waitDoorbell(seen, deadline, why)) return r;
  }
}

// MIXCCL_STANDIN_NCCL_ASYNC_FAIL=NAME=CODE[@N]: the N-th call of NAME fails when its stream
// reaches it, as NCCL work fails after it was enqueued (a network error, a peer gone). The
// segment is marked failed too, so the peers' waits end instead of lasting to the timeout.
ncclResult_t injectedAsync(CommState& c, const Op& op, std::string* why) {
  static FaultPlan* plan = new FaultPlan("MIXCCL_STANDIN_NCCL_ASYNC_FAIL");
  const int code = plan->check(opKindName(op.kind));
  if (code == 0) return ncclSuccess;
  *why = "rank " + std::to_string(c.rank) + ": " + opKindName(op.kind) +
         " failed on its stream: failure injected by MIXCCL_STANDIN_NCCL_ASYNC_FAIL=" + plan->text();
  c.segment->markFailed(*why);
  return static_cast<ncclResult_t>(code);
}

// MIXCCL_STANDIN_NCCL_CORRUPT=<collective> (e.g. ncclAllReduce): the first byte of each of its
// results is flipped, so a test can show that its checks see a library's wrong answer.
void corruptIfAsked(const std::vector<Op>& ops, int rank) {
  static const char* target = std::getenv("MIXCCL_STANDIN_NCCL_CORRUPT");
  if (target == nullptr) return;
  for (const Op& op : ops) {
    const bool writes = op.kind != OpKind::Send && (op.kind != OpKind::Reduce || op.root == rank);
    if (writes && op.count > 0 && op.recv != nullptr && std::strcmp(target, opKindName(op.kind)) == 0)
      op.recv[0] = static_cast<char>(op.recv[0] ^ 0x11);
  }
}

}  // namespace

const char* opKindName(OpKind k) {
  switch (k) {
    case OpKind::AllReduce: return "ncclAllReduce";
    case OpKind::AllGather: return "ncclAllGather";
    case OpKind::ReduceScatter: return "ncclReduceScatter";
    case OpKind::Broadcast: return "ncclBroadcast";
    case OpKind::Reduce: return "ncclReduce";
    case OpKind::Send: return "ncclSend";
    case OpKind::Recv: return "ncclRecv";
  }
  return "?";
}

void CommState::recordAsyncError(ncclResult_t r, const std::string& why) {
  std::lock_guard<std::mutex> lock(m);
  if (asyncError != ncclSuccess) return;
  asyncError = r;
  asyncMessage = why;
}

void runTask(Task* task, bool skipped) {
  std::unique_ptr<Task> owned(task);
  CommState& c = *task->comm;
  {
    // Calls run in the order this rank made them, even when they were enqueued on different
    // streams; a call whose stream reached it first waits (bounded) for the earlier ones.
    std::unique_lock<std::mutex> lock(c.m);
    const double deadline = Segment::now() + c.segment->timeoutS();
    while (c.serving != task->ticket && !c.aborted.load()) {
      if (Segment::now() > deadline) {
        c.asyncError = c.asyncError ? c.asyncError : ncclSystemError;
        c.asyncMessage = "a call waited longer than the timeout for an earlier call on another stream";
        break;
      }
      c.cv.wait_for(lock, std::chrono::milliseconds(20));
    }
  }
  bool failedBefore;
  {
    std::lock_guard<std::mutex> lock(c.m);
    failedBefore = c.asyncError != ncclSuccess;
  }
  if (skipped) {
    c.recordAsyncError(ncclUnhandledCudaError, "the stream's earlier work failed (the runtime reported an asynchronous error)");
  } else if (!c.aborted.load() && !failedBefore) {
    std::string why;
    ncclResult_t r = ncclSuccess;
    std::vector<Op> p2p;
    for (const Op& op : task->ops) {
      if ((r = injectedAsync(c, op, &why)) != ncclSuccess) break;
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        p2p.push_back(op);
      } else if ((r = Collective(c, op).run(&why)) != ncclSuccess) {
        break;
      }
    }
    if (r == ncclSuccess && !p2p.empty()) r = runPointToPoint(*c.segment, p2p, &why);
    if (r == ncclSuccess) corruptIfAsked(task->ops, c.rank);
    if (r != ncclSuccess) {
      c.recordAsyncError(r, why);
      std::fprintf(stderr, "stand-in NCCL: rank %d: %s\n", c.rank, why.c_str());
    }
  }
  std::lock_guard<std::mutex> lock(c.m);
  ++c.serving;
  c.cv.notify_all();
}

}  // namespace standin
