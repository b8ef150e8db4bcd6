// An IPv4 or IPv6 socket address, with parsing of "host:port" and "[v6addr]:port".
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/result.h"

namespace mixccl {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  bool valid() const { return length > 0; }
  // "1.2.3.4:5678" or "[::1]:5678".
  std::string toString() const;
};

// Parses "host:port" (host a name or a numeric address; IPv6 in brackets) and resolves it.
Result parseHostPort(const std::string& text, SocketAddress* out);

// A fixed-size wire form of an address (family, port, 16 address bytes), so addresses can be
// exchanged between ranks; decoding validates the family.
struct WireAddress {
  uint16_t family;  // AF_INET or AF_INET6, little endian on the wire like everything else
  uint16_t port;    // host order
  uint32_t scopeId;
  uint8_t addr[16];
};
static_assert(sizeof(WireAddress) == 24, "WireAddress is part of the wire format");

WireAddress toWire(const SocketAddress& a);
Result fromWire(const WireAddress& w, SocketAddress* out);

}  // namespace mixccl
