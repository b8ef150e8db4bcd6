// The shared-memory segment that joins the processes of one stand-in communicator. The unique
// id names it; every rank maps it at ncclCommInitRank, and the last to join unlinks the name,
// so nothing is left in /dev/shm once the communicator has formed. It holds
//  - a barrier (futex on a generation counter) with the collectives' call descriptors, which
//    every rank compares so that ranks calling different collectives fail instead of mixing;
//  - per rank a slot of two halves, alternating from one barrier to the next, through which
//    collectives move their data one chunk per barrier;
//  - per ordered pair of ranks a ring buffer, a byte stream of length-prefixed messages, for
//    Send/Recv; and per rank a doorbell its peers ring after moving bytes.
// Every wait is bounded by the timeout and ends when a peer has marked the segment failed
// (timeout, abort) or this rank's communicator was aborted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nccl.h>

namespace standin {

constexpr int kMaxRanks = 64;
constexpr size_t kSlotHalfBytes = 256 << 10;
constexpr size_t kChannelBytes = 64 << 10;

// What a collective call is, compared across ranks.
struct CallDesc {
  uint64_t seq;  // the communicator's collective count
  int32_t kind, type, op, root;
  uint64_t count;
  bool operator==(const CallDesc& o) const {
    return seq == o.seq && kind == o.kind && type == o.type && op == o.op && root == o.root && count == o.count;
  }
};

class Segment {
 public:
  // Opens (creating if first) and joins as rank; waits until all nranks have joined.
  // Returns ncclSuccess, or an error with *why set.
  static ncclResult_t join(const std::string& name, int nranks, int rank, double timeoutS,
                           const std::atomic<bool>* aborted, Segment** out, std::string* why);
  ~Segment();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Every rank arrives; then returns ncclSuccess, or ncclRemoteError / ncclSystemError with
  // *why when a peer failed, this rank was aborted or the timeout passed.
  ncclResult_t barrier(std::string* why);
  // Barriers passed so far: a round writes its data before its barrier and reads it after.
  uint64_t round() const { return round_; }
  // Rank r's slot half of a round (halves alternate from round to round).
  char* slot(int r, uint64_t round);
  // This round's call descriptor of rank r (double-buffered by the call's seq).
  CallDesc& desc(int r, uint64_t seq);

  // One message of a Send or Recv: an 8-byte length, then the payload.
  struct Transfer {
    int peer;
    char* data;
    uint64_t bytes;
    uint64_t done = 0;    // bytes of length and payload moved so far
    uint64_t header = 0;  // the length, as sent
    bool finished() const { return done == 8 + bytes; }
  };
  // Moves what fits of t to (sendSome) or from (recvSome) its peer without waiting; *moved
  // says whether anything moved. recvSome fails with ncclInvalidUsage and *why when the length
  // the peer sent differs from t->bytes.
  void sendSome(Transfer* t, bool* moved);
  ncclResult_t recvSome(Transfer* t, bool* moved, std::string* why);
  // Waits a few ms for a peer to ring this rank's doorbell since `seen`; fails as barrier()
  // does, and with ncclSystemError once `deadline` (Segment::now()) has passed.
  uint32_t doorbell();
  ncclResult_t waitDoorbell(uint32_t seen, double deadline, std::string* why);
  double timeoutS() const { return timeoutS_; }
  static double now();

  // Marks the segment failed by this rank, so every peer's wait ends with why.
  void markFailed(const std::string& why);

 private:
  struct Layout;
  static size_t layoutBytes();
  Segment() = default;
  ncclResult_t checkAlive(double deadline, std::string* why);
  void ring(int r);

  Layout* layout_ = nullptr;
  size_t bytes_ = 0;
  char* slots_ = nullptr;
  char* channels_ = nullptr;
  int rank_ = 0, nranks_ = 0;
  uint64_t round_ = 0;  // barriers passed
  double timeoutS_ = 60;
  const std::atomic<bool>* aborted_ = nullptr;
};

}  // namespace standin
