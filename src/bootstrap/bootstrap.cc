#include "bootstrap/bootstrap.h"

#include <string>

#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/socket.h"
#include "core/error.h"
#include "core/log.h"

namespace mixccl {

Result rendezvous(const UniqueIdData& id, int rank, int nranks, const PeerInfo& mine,
                  const Deadline& deadline, std::vector<PeerInfo>* all) {
  SocketAddress rootAddr;
  MIXCCL_CHECK(fromWire(id.root, &rootAddr));
  std::string what = "rendezvous root " + rootAddr.toString();
  Socket conn;
  Result r = connectBefore(rootAddr, deadline, &conn);
  if (r != mixcclSuccess) return r;
  MIXCCL_CHECK(authenticateClient(conn, id.secret, deadline, what.c_str()));
  RankHello hello{kRankHelloMagic, nranks, rank, 0, mine};
  MIXCCL_CHECK(sendAllBefore(conn, &hello, sizeof(hello), deadline, what.c_str()));
  RootReply reply;
  MIXCCL_CHECK(recvAllBefore(conn, &reply, sizeof(reply), deadline, what.c_str()));
  if (reply.status != 0)
    return raiseError((Result)(reply.status > 0 && reply.status < mixcclNumResults
                                   ? reply.status : mixcclRemoteError),
                      "%s refused rank %d of %d (see the root's log)", what.c_str(), rank, nranks);
  if (reply.nranks != nranks)
    return raiseError(mixcclRemoteError, "%s answered with %d ranks, expected %d", what.c_str(),
                      reply.nranks, nranks);
  all->resize(nranks);
  MIXCCL_CHECK(recvAllBefore(conn, all->data(), sizeof(PeerInfo) * nranks, deadline, what.c_str()));
  for (int i = 0; i < nranks; ++i) {
    if ((*all)[i].rank != i)
      return raiseError(mixcclRemoteError, "%s sent a bad table entry %d", what.c_str(), i);
  }
  INFO(kLogBootstrap, "rank %d: rendezvous with %d ranks done", rank, nranks);
  return mixcclSuccess;
}

}  // namespace mixccl
