#include "bootstrap/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace mixccl {

int SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return -1;
}

void SocketAddress::setPort(int port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
              sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  return "<no address>";
}

Result parseHostPort(const std::string& text, SocketAddress* out) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return raiseError(mixcclInvalidArgument, "bad address '%s': expected [ipv6]:port",
                        text.c_str());
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return raiseError(mixcclInvalidArgument, "bad address '%s': expected host:port", text.c_str());
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535)
    return raiseError(mixcclInvalidArgument, "bad port in address '%s'", text.c_str());
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    return raiseError(mixcclInvalidArgument, "cannot resolve host '%s' of address '%s': %s",
                      host.c_str(), text.c_str(), gai_strerror(rc));
  memcpy(&out->storage, res->ai_addr, res->ai_addrlen);
  out->length = res->ai_addrlen;
  freeaddrinfo(res);
  out->setPort((int)p);
  return mixcclSuccess;
}

WireAddress toWire(const SocketAddress& a) {
  WireAddress w{};
  w.family = (uint16_t)a.family();
  w.port = (uint16_t)a.port();
  if (a.family() == AF_INET) {
    memcpy(w.addr, &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr, 4);
  } else if (a.family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    memcpy(w.addr, &in6->sin6_addr, 16);
    w.scopeId = in6->sin6_scope_id;
  }
  return w;
}

Result fromWire(const WireAddress& w, SocketAddress* out) {
  *out = SocketAddress{};
  if (w.family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&out->storage);
    in->sin_family = AF_INET;
    memcpy(&in->sin_addr, w.addr, 4);
    out->length = sizeof(sockaddr_in);
  } else if (w.family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out->storage);
    in6->sin6_family = AF_INET6;
    memcpy(&in6->sin6_addr, w.addr, 16);
    in6->sin6_scope_id = w.scopeId;
    out->length = sizeof(sockaddr_in6);
  } else {
    return raiseError(mixcclRemoteError, "received an address of unknown family %u", w.family);
  }
  out->setPort(w.port);
  return mixcclSuccess;
}

}  // namespace mixccl
