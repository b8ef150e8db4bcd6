// Hostile frames written straight into the raw end of a proxy's socket data connection (the
// harness's Exposed): each ends the posted receive with mixcclRemoteError (or, for another call's
// stamp, mixcclInvalidUsage) naming the peer, within a second, and never writes outside the
// posted buffer; a frame that comes before its receive is posted waits for it.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "proxy_transport_harness.h"
#include "transport/frame.h"

namespace {

using namespace mixccl;
using namespace mixccl::proxytest;

struct Hostile {
  const char* name;
  std::vector<FrameHeader> headers;  // written one after the other, each with its payload
  size_t payloadOverride;            // bytes of payload after the last header (SIZE_MAX: all)
  const char* mention;
  Result code = mixcclRemoteError;   // what the receive ends with
};

TEST(ProxyTransport, HostileFramesEndTheReceiveWithoutTouchingOtherMemory) {
  const size_t posted = 100;
  const Hostile cases[] = {
      {"bad magic", {{0x12345678, 0, posted, 0, (uint32_t)posted, 0, 0}}, SIZE_MAX,
       "invalid frame"},
      {"unknown flags", {{kFrameMagic, 0, posted, 0, (uint32_t)posted, 0x80, 0}}, SIZE_MAX,
       "invalid frame"},
      {"huge total", {{kFrameMagic, 0, 1ull << 60, 0, 4096, 0, 0}}, SIZE_MAX, "bytes to a receive"},
      {"beyond the message", {{kFrameMagic, 0, posted, 90, 20, 0, 0}}, SIZE_MAX, "invalid frame"},
      {"offset overflow", {{kFrameMagic, 0, posted, UINT64_MAX - 5, 10, 0, 0}}, SIZE_MAX,
       "invalid frame"},
      {"overfull",
       {{kFrameMagic, 0, posted, 0, 60, 0, 0}, {kFrameMagic, 0, posted, 0, 60, 0, 0}},
       SIZE_MAX, "invalid frame"},
      {"truncated payload", {{kFrameMagic, 0, posted, 0, (uint32_t)posted, 0, 0}}, 50, "closed"},
      {"bye with a receive pending", {{kFrameMagic, 0, 0, 0, 0, kFrameFlagBye, 0}}, 0,
       "with operations pending"},
      {"end of stream", {}, 0, "closed the connection"},
      // A frame of another call (the receive expects no collective): both calls named.
      {"another call's stamp", {{kFrameMagic, 0, posted, 0, (uint32_t)posted, 0, (1ull << 60) | 5}},
       SIZE_MAX, "called mixcclAllReduce (count 5, datatype int8, op sum) while this rank",
       mixcclInvalidUsage},
  };
  for (const Hostile& h : cases) {
    SCOPED_TRACE(h.name);
    std::unique_ptr<Exposed> ex = makeExposed();
    Exposed& e = *ex;
    std::unique_ptr<uint8_t[]> buf(new uint8_t[posted]);  // exactly posted: ASan guards it
    TransportRequest op(TransportRequest::Kind::Recv, 1, buf.get(), posted);
    e.proxy->post(&op);
    for (size_t k = 0; k < h.headers.size(); ++k) {
      const FrameHeader& hdr = h.headers[k];
      ASSERT_EQ(send(e.raw.fd(), &hdr, sizeof(hdr), MSG_NOSIGNAL), (ssize_t)sizeof(hdr));
      size_t body = std::min<size_t>(hdr.length, 8192);
      if (k + 1 == h.headers.size() && h.payloadOverride != SIZE_MAX) body = h.payloadOverride;
      std::vector<uint8_t> payload(body, 0xAB);
      if (body) send(e.raw.fd(), payload.data(), body, MSG_NOSIGNAL);
    }
    e.raw.shutdown();
    double t0 = fault_now();
    Result r = e.proxy->wait(&op, Deadline::afterSeconds(10));
    double took = fault_now() - t0;
    std::string msg;
    e.health.error(&msg);
    EXPECT_EQ(r, h.code) << msg;
    EXPECT_LT(took, 1.0);
    EXPECT_NE(msg.find(h.mention), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
  }
}

// A header for a receive that is not posted yet waits in the kernel, then completes once the
// receive is posted.
TEST(ProxyTransport, EarlyFrameWaitsForItsReceive) {
  std::unique_ptr<Exposed> ex = makeExposed();
  Exposed& e = *ex;
  const char text[] = "early bird";
  FrameHeader hdr{kFrameMagic, 0, sizeof(text), 0, (uint32_t)sizeof(text), 0, 0};
  ASSERT_EQ(send(e.raw.fd(), &hdr, sizeof(hdr), MSG_NOSIGNAL), (ssize_t)sizeof(hdr));
  ASSERT_EQ(send(e.raw.fd(), text, sizeof(text), MSG_NOSIGNAL), (ssize_t)sizeof(text));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  char got[sizeof(text)] = {0};
  TransportRequest op(TransportRequest::Kind::Recv, 1, got, sizeof(got));
  e.proxy->post(&op);
  EXPECT_EQ(e.proxy->wait(&op, Deadline::afterSeconds(5)), mixcclSuccess);
  EXPECT_STREQ(got, text);
}

}  // namespace
