// The proxy over the UCX transport, where UCX itself matches messages to receives: a stranger
// that has rank 0's worker address but not the pair's key cannot inject a message; a message of
// another size than the posted receive names the peer and both sizes, and one that UCX truncated
// is a collective's mismatch; no byte lands past a posted receive. Empty in a build without UCX.
#ifdef MIXCCL_TEST_HAVE_UCX
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "proxy_transport_harness.h"
#include "transport/ucx/ucx_connection.h"
#include "transport/ucx/ucx_tag.h"
#include "transport/ucx/ucx_transport.h"

namespace {

using namespace mixccl;
using namespace mixccl::proxytest;

// A stranger that learned rank 0's worker address (it never travels but over authenticated
// connections; here the test hands it over) connects its own UCP worker and floods rank 0
// with tagged messages: random tags, every sequence number with guessed keys, key 0, eager
// and rendezvous sizes, before and during the pair's traffic. Without the receiver's key
// nothing matches a posted receive (the full tag mask), so every byte the pair receives is
// its peer's and no failure is reported.
TEST(ProxyTransportUcx, StrangerWithTheAddressButNoKeyCannotInject) {
  std::vector<Socket> control(2);
  std::vector<std::vector<std::unique_ptr<Connection>>> conns(2);
  makeConnections("ucx", 1, 65536, control.data(), &conns);
  ASSERT_TRUE(conns[0][1]);
  const std::vector<uint8_t> address =
      static_cast<UcxConnection*>(conns[0][1].get())->localAddress();
  Pair p;
  std::vector<Socket> c0(2), c1(2);
  c0[1] = std::move(control[0]);
  c1[0] = std::move(control[1]);
  p.p0.reset(new Proxy(params(0), p.h0, std::move(c0), std::move(conns[0])));
  p.p1.reset(new Proxy(params(1), p.h1, std::move(c1), std::move(conns[1])));
  ASSERT_EQ(p.p0->start(), mixcclSuccess);
  ASSERT_EQ(p.p1->start(), mixcclSuccess);

  std::shared_ptr<UcxWorker> stranger;
  ASSERT_EQ(UcxWorker::create(99, 2, 0, &stranger), mixcclSuccess);
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  ep.address = reinterpret_cast<const ucp_address_t*>(address.data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ucp_ep_h sep = nullptr;
  ASSERT_EQ(ucp_ep_create(stranger->handle(), &ep, &sep), UCS_OK);
  std::vector<uint8_t> junk(1 << 20, 0x66);
  std::vector<void*> pending;
  uint64_t sent = 0;
  auto flood = [&](int count) {
    std::mt19937_64 rng(12345 + sent);
    for (int i = 0; i < count; ++i, ++sent) {
      uint64_t tag = i % 3 == 0 ? rng() : i % 3 == 1 ? ucxTag((uint32_t)rng(), (uint32_t)(i / 3))
                                                     : ucxTag(0, (uint32_t)(i / 3));
      size_t bytes = i % 50 == 0 ? junk.size() : (size_t)(i % 700);
      ucp_request_param_t rp{};
      ucs_status_ptr_t sp = ucp_tag_send_nbx(sep, junk.data(), bytes, tag, &rp);
      if (UCS_PTR_IS_PTR(sp)) pending.push_back(sp);
      stranger->progress();
    }
  };
  flood(600);
  std::atomic<int> bad{0};
  std::atomic<bool> stop{false};
  std::thread strangerThread([&] {
    while (!stop.load()) {
      flood(20);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  trafficBothWays(p, 48, &bad);
  stop.store(true);
  strangerThread.join();
  EXPECT_GT(sent, 600u);
  EXPECT_EQ(bad.load(), 0);
  std::string msg;
  EXPECT_EQ(p.h0.error(&msg), mixcclSuccess) << msg;
  EXPECT_EQ(p.h1.error(&msg), mixcclSuccess) << msg;
  p.p0->shutdownGracefully();
  p.p1->shutdownGracefully();
  // The stranger's rendezvous sends never match: drop them with its endpoint.
  for (void* r : pending) {
    ucp_request_cancel(stranger->handle(), r);
    ucp_request_free(r);
  }
  ucp_request_param_t cp{};
  cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  cp.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t closing = ucp_ep_close_nbx(sep, &cp);
  if (UCS_PTR_IS_PTR(closing)) {
    for (int i = 0; i < 1000 && ucp_request_check_status(closing) == UCS_INPROGRESS; ++i)
      stranger->progress();
    ucp_request_free(closing);
  }
}

// A message of another size than the posted receive fails the receive with mixcclRemoteError
// naming the peer and both sizes; a longer one is truncated by nobody: UCX refuses it, and not
// a byte lands past the posted buffer (a guard byte checks it).
TEST(ProxyTransportUcx, SizeMismatchNamesThePeerAndBothSizes) {
  struct Case {
    size_t sent;
    const char* want;
  } cases[] = {{50, "rank 0: rank 1 (test) sent a message of 50 bytes to a receive of 100 bytes "
                     "(mismatched calls?)"},
               {300000, "rank 0: rank 1 (test) sent a message of more than 100 bytes to a receive "
                         "of 100 bytes (mismatched calls?)"},
               {5000, "rank 0: rank 1 (test) sent a message of more than 100 bytes to a receive "
                       "of 100 bytes (mismatched calls?)"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sent);
    std::unique_ptr<Pair> pair = makePair("ucx", 1, 65536);
    Pair& p = *pair;
    std::vector<uint8_t> in(101, 0xEE), out(c.sent, 0x11);
    TransportRequest recv(TransportRequest::Kind::Recv, 1, in.data(), 100);
    TransportRequest send(TransportRequest::Kind::Send, 0, out.data(), out.size());
    p.p0->post(&recv);
    p.p1->post(&send);
    std::thread sender([&] { p.p1->wait(&send, Deadline::afterSeconds(5)); });
    EXPECT_EQ(p.p0->wait(&recv, Deadline::afterSeconds(10)), mixcclRemoteError);
    p.p0->abort("test over");
    sender.join();
    std::string msg;
    p.h0.error(&msg);
    EXPECT_EQ(msg, c.want);
    EXPECT_EQ(in[100], 0xEE) << "a byte was written past the posted receive";
  }
}

// A collective's receive that a larger message overran (UCX truncated it, so its stamp is
// unread) is a mismatch: mixcclInvalidUsage naming this rank's call, after a short wait for the
// peer's notice naming both (this peer sends none).
TEST(ProxyTransportUcx, ATruncatedMessageOfACollectiveIsAMismatchNamingThisRanksCall) {
  std::unique_ptr<Pair> pair = makePair("ucx", 1, 65536);
  Pair& p = *pair;
  std::vector<uint8_t> in(101, 0xEE), out(5000, 0x11);
  TransportRequest recv(TransportRequest::Kind::Recv, 1, in.data(), 100);
  recv.stamp = (1ull << 60) | 25;  // mixcclAllReduce (count 25, datatype int8, op sum)
  TransportRequest send(TransportRequest::Kind::Send, 0, out.data(), out.size());
  p.p0->post(&recv);
  p.p1->post(&send);
  std::thread sender([&] { p.p1->wait(&send, Deadline::afterSeconds(5)); });
  double t0 = fault_now();
  EXPECT_EQ(p.p0->wait(&recv, Deadline::afterSeconds(10)), mixcclInvalidUsage);
  double took = fault_now() - t0;
  p.p0->abort("test over");
  sender.join();
  std::string msg;
  p.h0.error(&msg);
  EXPECT_EQ(msg, "rank 0: rank 1 (test) sent a message of more than 100 bytes to a receive of 100 "
                 "bytes of this rank's mixcclAllReduce (count 25, datatype int8, op sum): "
                 "mismatched calls (every rank must make the same collective calls in the same "
                 "order)");
  EXPECT_GT(took, 0.15);  // the wait for the peer's notice
  EXPECT_LT(took, 1.0);
  EXPECT_EQ(in[100], 0xEE) << "a byte was written past the posted receive";
}

}  // namespace
#endif  // MIXCCL_TEST_HAVE_UCX
