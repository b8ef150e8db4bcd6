// One exchange step over the pairs' control connections while a communicator is being set up
// (before the proxy owns them): send one fixed-size message to every peer in a list, then read
// one from each. Sending all before reading any cannot deadlock, as the messages are small
// enough for the sockets' buffers. The shared-memory setups (rings, slots) agree through it.
#pragma once

#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "bootstrap/socket.h"

namespace mixccl {

// out[i] goes to peers[i], in[i] comes from peers[i]; conns[p][0] is the control connection
// to p, names[i] names peers[i] in errors.
template <typename Msg>
Result exchangeWithPeers(const std::vector<int>& peers, const std::vector<std::vector<Socket>>& conns,
                         const std::vector<Msg>& out, std::vector<Msg>* in, const Deadline& deadline,
                         const std::vector<std::string>& names) {
  for (size_t i = 0; i < peers.size(); ++i)
    MIXCCL_CHECK(sendAllBefore(conns[peers[i]][0], &out[i], sizeof(Msg), deadline,
                               names[i].c_str()));
  in->resize(peers.size());
  for (size_t i = 0; i < peers.size(); ++i)
    MIXCCL_CHECK(recvAllBefore(conns[peers[i]][0], &(*in)[i], sizeof(Msg), deadline,
                               names[i].c_str()));
  return mixcclSuccess;
}

}  // namespace mixccl
