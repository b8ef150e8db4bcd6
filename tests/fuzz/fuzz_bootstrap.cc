// libFuzzer target: everything the bootstrap reads from the network, plus the unique id and
// the mismatch table. The first input byte picks the parser; the rest is what a hostile peer
// would send. Besides memory errors (ASan/UBSan), it checks properties:
//  - no input ever passes the challenge-response (nobody without the secret gets in);
//  - whatever the root admits gives placements the rank side accepts (both sides agree);
//  - a neighbour's exchange messages are refused or fully checked;
//  - the rendezvous table never counts more ranks than it has;
//  - identical mismatch descriptors always compare equal.
#include <sys/socket.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/exchange_wire.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "core/mismatch_check.h"

using namespace mixccl;

namespace {

void require(bool cond, const char* what) {
  if (!cond) {
    fprintf(stderr, "fuzz_bootstrap: property violated: %s\n", what);
    abort();
  }
}

const Secret kSecret = {{0x6d, 0x69, 0x78, 0x63, 0x63, 0x6c, 0x2d, 0x66, 0x75, 0x7a, 0x7a, 0x2d,
                         0x6b, 0x65, 0x79, 0x21}};

// Runs one side of the handshake against the bytes of data (then end of stream).
void handshake(bool server, const uint8_t* data, size_t size) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
  Socket mine(sv[0]), peer(sv[1]);
  size_t n = size < 32768 ? size : 32768;  // below the socket buffer: never blocks
  if (n && send(peer.fd(), data, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) return;
  ::shutdown(peer.fd(), SHUT_WR);
  Deadline d = Deadline::afterSeconds(2);
  Result r = server ? authenticateServer(mine, kSecret, d, "fuzz peer")
                    : authenticateClient(mine, kSecret, d, "fuzz peer");
  require(r != mixcclSuccess, "a peer without the secret passed the handshake");
}

void rankHellos(const uint8_t* data, size_t size) {
  RendezvousTable table;
  // Each hello is preceded by one control byte: bit 0 forces the right magic, bit 1 makes
  // the strings terminated, bits 2-3 pick a small nranks (and one root), so the fuzzer reaches
  // the table.
  const size_t step = 1 + sizeof(RankHello);
  for (size_t off = 0; off + step <= size; off += step) {
    uint8_t ctl = data[off];
    RankHello h;
    memcpy(&h, data + off + 1, sizeof(h));
    if (ctl & 1) h.magic = kRankHelloMagic;
    if (ctl & 2) {
      h.info.hostname[sizeof(h.info.hostname) - 1] = 0;
      h.info.adaptor[sizeof(h.info.adaptor) - 1] = 0;
    }
    if (ctl & 4) h.nranks = 1 + ((ctl >> 3) & 3);
    if (ctl & 4 && h.nranks > 0) h.rank = (int32_t)((uint32_t)h.rank % (uint32_t)h.nranks);
    if (ctl & 4) h.nroots = 1, h.rootIndex = 0;
    std::string why;
    RendezvousTable::Verdict v = table.offer(h, &why);
    require(v == RendezvousTable::Verdict::Admitted || !why.empty(), "refusal without reason");
    require(table.arrived() <= table.nranks() || table.nranks() < 0, "more ranks than nranks");
    if (ctl & 0x80) table.drop(h.rank);
  }
  if (table.complete()) {
    const ExchangeTree tree(table.nranks(), table.nroots());
    for (int r : table.expectedRanks()) {
      std::string why;
      RootPlacement p =
          placementFor(tree, r, table.rootIndex(), table.table(), table.exchangeAddrs());
      require(checkRootPlacement(p, tree, r, table.rootIndex(), &why),
              "the root admitted ranks whose placements the ranks refuse");
    }
  }
}

void rootReply(const uint8_t* data, size_t size) {
  if (size < 1 + sizeof(RootReply)) return;
  int expected = 1 + data[0] % 8;
  RootReply reply;
  memcpy(&reply, data + 1, sizeof(reply));
  Result refusal;
  std::string why;
  bool ok = checkRootReply(reply, expected, &refusal, &why);
  require(ok == (refusal == mixcclSuccess), "verdict and code disagree");
  require(ok || (refusal > mixcclSuccess && refusal < mixcclNumResults), "bad refusal code");
  size_t rest = size - 1 - sizeof(RootReply);
  if (!ok || rest < sizeof(RootPlacement)) return;
  RootPlacement p;
  memcpy(&p, data + 1 + sizeof(RootReply), sizeof(p));
  const int nroots = 1 + data[0] / 8 % expected;
  checkRootPlacement(p, ExchangeTree(expected, nroots), data[0] / 64 % expected, 0, &why);
}

// What a neighbour sends in the peer-info exchange: a hello, a header, records.
void exchangeMessages(const uint8_t* data, size_t size) {
  if (size < 1 + sizeof(ExchangeHello) + sizeof(ExchangeHeader)) return;
  const int nranks = 1 + data[0] % 16, rank = data[0] / 16 % nranks;
  const ExchangeTree tree(nranks, 1);
  ExchangeHello hello;
  memcpy(&hello, data + 1, sizeof(hello));
  std::string why;
  if (checkExchangeHello(hello, 0, tree.children(rank), &why))
    require(tree.parent(hello.rank) == rank, "a hello from a rank that is no child passed");
  ExchangeHeader h;
  memcpy(&h, data + 1 + sizeof(hello), sizeof(h));
  const std::vector<int> subtree = tree.subtree(rank);
  Result failure;
  if (!checkExchangeHeader(h, (int)subtree.size(), &failure, &why)) {
    require(failure > mixcclSuccess && failure < mixcclNumResults && !why.empty(),
            "a refused header without a code and a reason");
    return;
  }
  const size_t at = 1 + sizeof(hello) + sizeof(h);
  if (size - at < subtree.size() * sizeof(PeerInfo)) return;
  std::vector<PeerInfo> records(subtree.size());
  memcpy(records.data(), data + at, records.size() * sizeof(PeerInfo));
  checkSubtreeRecords(records.data(), subtree, &why);
}

void mismatchTable(const uint8_t* data, size_t size) {
  size_t n = size / sizeof(CollDescWire);
  if (n == 0 || n > 64) return;
  std::vector<CollDescWire> all(n);
  memcpy(all.data(), data, n * sizeof(CollDescWire));
  std::string msg;
  uint32_t next = 0;
  Result r = compareCollDescs("mixcclAllReduce", all, &msg, &next);
  require(r == mixcclSuccess || !msg.empty(), "mismatch without a message");
  std::vector<CollDescWire> same(n, all[0]);
  r = compareCollDescs("mixcclAllReduce", same, &msg, &next);
  require(r == mixcclSuccess || all[0].magic != 0x4b434843, "identical entries differ");
}

void uniqueId(const uint8_t* data, size_t size) {
  mixcclUniqueId id;
  memset(&id, 0, sizeof(id));
  memcpy(id.internal, data, size < sizeof(id) ? size : sizeof(id));
  UniqueIdData out;
  decodeUniqueId(id, &out);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("MIXCCL_DEBUG", "NONE", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 7;
  ++data;
  --size;
  switch (mode) {
    case 0: handshake(true, data, size); break;
    case 1: handshake(false, data, size); break;
    case 2: rankHellos(data, size); break;
    case 3: rootReply(data, size); break;
    case 4: mismatchTable(data, size); break;
    case 5: uniqueId(data, size); break;
    case 6: exchangeMessages(data, size); break;
  }
  return 0;
}
