#include "transport/ucx/ucx_handshake.h"

#include "base/error.h"

namespace mixccl {
namespace {

constexpr uint32_t kUcxHelloMagic = 0x48584355;  // "UCXH"
constexpr uint32_t kUcxHelloVersion = 1;

struct UcxHello {
  uint32_t magic;
  uint32_t version;
  uint64_t commHash;
  uint32_t addressBytes;
  uint32_t recvKey;
  uint32_t recvByeKey;
  uint32_t reserved;
};
static_assert(sizeof(UcxHello) == 32, "UcxHello is part of the wire format");

}  // namespace

Result exchangeUcxSetup(int rank, uint64_t commHash, const std::vector<int>& peers,
                        const std::vector<std::string>& names,
                        const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                        const std::vector<uint8_t>& myAddress, const std::vector<UcxOffer>& offers,
                        std::vector<UcxPeerSetup>* out) {
  // Sending to every peer before reading any cannot deadlock: a hello and an address fit in
  // the socket buffers.
  for (size_t i = 0; i < peers.size(); ++i) {
    UcxHello h{kUcxHelloMagic, kUcxHelloVersion, commHash, (uint32_t)myAddress.size(),
               offers[i].recvKey, offers[i].recvByeKey, 0};
    const Socket& s = conns[peers[i]][0];
    MIXCCL_CHECK(sendAllBefore(s, &h, sizeof(h), deadline, names[i].c_str()));
    MIXCCL_CHECK(sendAllBefore(s, myAddress.data(), myAddress.size(), deadline, names[i].c_str()));
  }
  out->assign(peers.size(), UcxPeerSetup{});
  for (size_t i = 0; i < peers.size(); ++i) {
    UcxHello h{};
    const Socket& s = conns[peers[i]][0];
    MIXCCL_CHECK(recvAllBefore(s, &h, sizeof(h), deadline, names[i].c_str()));
    if (h.magic != kUcxHelloMagic || h.version != kUcxHelloVersion || h.commHash != commHash ||
        h.addressBytes == 0 || h.addressBytes > kUcxMaxAddressBytes)
      return raiseError(mixcclRemoteError, "rank %d: %s sent an invalid UCX hello (magic %08x, "
                        "version %u, address of %u bytes)", rank, names[i].c_str(), h.magic,
                        h.version, h.addressBytes);
    UcxPeerSetup& p = (*out)[i];
    p.address.resize(h.addressBytes);
    MIXCCL_CHECK(recvAllBefore(s, p.address.data(), p.address.size(), deadline, names[i].c_str()));
    p.sendKey = h.recvKey;
    p.sendByeKey = h.recvByeKey;
  }
  return mixcclSuccess;
}

Result exchangeUcxStatus(int rank, const std::vector<int>& peers,
                         const std::vector<std::string>& names,
                         const std::vector<std::vector<Socket>>& conns, const Deadline& deadline,
                         bool mineOk, const char* what) {
  uint32_t mine = mineOk ? 1u : 0u;
  for (size_t i = 0; i < peers.size(); ++i)
    MIXCCL_CHECK(sendAllBefore(conns[peers[i]][0], &mine, sizeof(mine), deadline, names[i].c_str()));
  Result first = mixcclSuccess;
  for (size_t i = 0; i < peers.size(); ++i) {
    uint32_t theirs = 0;
    MIXCCL_CHECK(recvAllBefore(conns[peers[i]][0], &theirs, sizeof(theirs), deadline,
                               names[i].c_str()));
    if (theirs != 1 && first == mixcclSuccess && mineOk)
      first = raiseError(mixcclRemoteError, "rank %d: %s could not %s (see its log)", rank,
                         names[i].c_str(), what);
  }
  return first;
}

}  // namespace mixccl
