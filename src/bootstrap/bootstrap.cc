#include "bootstrap/bootstrap.h"

#include <chrono>
#include <string>

#include "bootstrap/auth_connect.h"
#include "bootstrap/rendezvous_report.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "base/error.h"
#include "base/log.h"

namespace mixccl {
namespace {

constexpr int kRootAnswerGraceS = 5;

}  // namespace

Result rendezvous(const UniqueIdData& id, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all) {
  SocketAddress rootAddr;
  MIXCCL_CHECK(fromWire(id.root, &rootAddr));
  std::string what = "rendezvous root " + rootAddr.toString();
  Socket conn;
  MIXCCL_CHECK(connectAuthenticated(rootAddr, id.secret, deadline, what.c_str(), &conn));
  RankHello hello{kRankHelloMagic, nranks, rank, 0, mine};
  MIXCCL_CHECK(sendAllBefore(conn, &hello, sizeof(hello), deadline, what.c_str()));
  // When ranks are missing the root answers at its own deadline, which may fall a little after
  // ours (rank 0 starts the root after its deadline; other ranks may start earlier): wait that
  // much longer for its answer, which names the missing ranks, rather than report a bare timeout.
  const Deadline answer(deadline.at() + std::chrono::seconds(kRootAnswerGraceS));
  RootReply reply;
  MIXCCL_CHECK(recvAllBefore(conn, &reply, sizeof(reply), answer, what.c_str()));
  Result refusal;
  std::string why;
  if (!checkRootReply(reply, nranks, &refusal, &why)) {
    // The root's own messages already start with "rendezvous root <address>".
    bool named = why.compare(0, what.size(), what) == 0;
    std::string causes =
        refusal == mixcclTimeout ? ": " + missingRanksCauses(startedByMpirun()) : "";
    return raiseError(refusal, "rank %d of %d: %s%s%s%s", rank, nranks, named ? "" : what.c_str(),
                      named ? "" : ": ", why.c_str(), causes.c_str());
  }
  all->resize(nranks);
  MIXCCL_CHECK(recvAllBefore(conn, all->data(), sizeof(PeerInfo) * nranks, deadline, what.c_str()));
  if (!checkPeerTable(all->data(), nranks, &why))
    return raiseError(mixcclRemoteError, "%s sent a bad table: %s", what.c_str(), why.c_str());
  INFO(kLogBootstrap, "rank %d: rendezvous with %d ranks done", rank, nranks);
  return mixcclSuccess;
}

}  // namespace mixccl
