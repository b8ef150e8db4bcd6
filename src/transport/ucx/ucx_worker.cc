#include "transport/ucx/ucx_worker.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>

#include "base/error.h"

namespace mixccl {

const char* ucxStatusText(ucs_status_t s) { return ucs_status_string(s); }

std::string ucxEndpointInfo(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return "";
  ucp_ep_print_info(ep, f);
  fclose(f);
  std::string all(text ? text : "", size);
  free(text);
  return all;
}

size_t ucxEagerShortBytes(const std::string& all) {
  // "#   tag_send: 0..<egr/short>..8185..<egr/zcopy>..": the bound after <egr/short>.
  size_t line = all.find("tag_send:");
  size_t mark = line == std::string::npos ? line : all.find("<egr/short>..", line);
  if (mark == std::string::npos || mark > all.find('\n', line)) return 0;
  return (size_t)strtoull(all.c_str() + mark + strlen("<egr/short>.."), nullptr, 10);
}

std::string ucxEndpointTransports(const std::string& all) {
  // Lines like "#   lane[0]:  0:tcp/lo.0 md[0] -> ...": the name between "N:" and "/".
  std::vector<std::string> names;
  for (size_t at = all.find("lane["); at != std::string::npos; at = all.find("lane[", at + 1)) {
    size_t colon = all.find(':', all.find("]:", at) + 2);
    size_t slash = all.find('/', colon);
    size_t eol = all.find('\n', at);
    if (colon == std::string::npos || slash == std::string::npos || slash > eol) continue;
    std::string name = all.substr(colon + 1, slash - colon - 1);
    bool seen = false;
    for (const std::string& n : names) seen = seen || n == name;
    if (!seen && !name.empty()) names.push_back(name);
  }
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ",") + n;
  return s;
}

std::string ucxTlsSetting() {
  const char* tls = getenv("UCX_TLS");
  return tls ? std::string("UCX_TLS=") + tls : std::string("UCX_TLS unset");
}

namespace {

std::string memoryTypeList(uint64_t mask) {
  static const struct {
    ucs_memory_type_t type;
    const char* name;
  } kTypes[] = {{UCS_MEMORY_TYPE_HOST, "host"},         {UCS_MEMORY_TYPE_CUDA, "cuda"},
                {UCS_MEMORY_TYPE_CUDA_MANAGED, "cuda-managed"}, {UCS_MEMORY_TYPE_ROCM, "rocm"},
                {UCS_MEMORY_TYPE_ROCM_MANAGED, "rocm-managed"}};
  std::string s;
  for (const auto& t : kTypes)
    if (mask & (1ull << t.type)) s += (s.empty() ? "" : ",") + std::string(t.name);
  return s.empty() ? "host" : s;
}

// UCX's tcp transport sends a rendezvous over active messages in segments of
// UCX_TCP_TX_SEG_SIZE (8 KiB in UCX 1.13): with error handling mode PEER, which mixccl needs,
// tcp gets no zero-copy rma_bw lane (docs/performance-ucx-ofi.md, "What mode NONE really changes"),
// so every large message goes that way, one segment per call. Segments of the socket
// transport's frame size cost a fraction of the calls (measured 1.1-2.1x sendrecv at 1-64 MiB).
// A value the user set in the environment wins.
std::string setTcpSegments(ucp_config_t* config, size_t segmentBytes) {
  const char* tx = getenv("UCX_TCP_TX_SEG_SIZE");
  const char* rx = getenv("UCX_TCP_RX_SEG_SIZE");
  if (tx || rx) return std::string("tcp segments from the environment (UCX_TCP_") + (tx ? "TX" : "RX") + "_SEG_SIZE)";
  if (segmentBytes == 0) return "tcp segments UCX's default";
  // Within 8 KiB (UCX's own) and 1 MiB: every tcp interface keeps a pool of receive segments.
  segmentBytes = std::min<size_t>(std::max<size_t>(segmentBytes, 8 << 10), 1 << 20);
  const std::string value = std::to_string(segmentBytes);
  // Named without "TCP_": ucp_config_modify passes keys its own table lacks on to the
  // transports' tables, where tcp's fields are TX_SEG_SIZE and RX_SEG_SIZE (with the prefix
  // UCX warns "invalid configurations" and ignores them). Only tcp has these two names.
  ucs_status_t a = ucp_config_modify(config, "TX_SEG_SIZE", value.c_str());
  ucs_status_t b = ucp_config_modify(config, "RX_SEG_SIZE", value.c_str());
  if (a != UCS_OK || b != UCS_OK)
    return std::string("tcp segments UCX's default (ucp_config_modify: ") +
           ucxStatusText(a != UCS_OK ? a : b) + ")";
  return "tcp segments " + std::to_string(segmentBytes >> 10) + " KiB";
}

}  // namespace

Result UcxWorker::create(int rank, int nranks, size_t segmentBytes,
                         std::shared_ptr<UcxWorker>* out) {
  std::shared_ptr<UcxWorker> w(new UcxWorker);
  ucp_config_t* config = nullptr;
  // NULL prefix/file: UCX reads UCX_* from the environment itself (UCX_TLS, UCX_NET_DEVICES).
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx': ucp_config_read failed: %s "
                      "(check the UCX_* variables)", rank, ucxStatusText(st));
  w->segments_ = setTcpSegments(config, segmentBytes);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;  // one worker per context
  params.estimated_num_eps = nranks > 1 ? (size_t)nranks - 1 : 1;
  st = ucp_init(&params, config, &w->context_);
  ucp_config_release(config);
  if (st != UCS_OK)
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx' cannot start: ucp_init: %s "
                      "(%s)", rank, ucxStatusText(st), ucxTlsSetting().c_str());

  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(w->context_, &attr) == UCS_OK) {
    w->cuda_ = (attr.memory_types & (1ull << UCS_MEMORY_TYPE_CUDA)) != 0;
    w->memoryTypes_ = memoryTypeList(attr.memory_types);
  } else {
    w->memoryTypes_ = "host";
  }

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(w->context_, &wp, &w->worker_);
  if (st != UCS_OK)
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx' cannot start: "
                      "ucp_worker_create: %s (%s)", rank, ucxStatusText(st),
                      ucxTlsSetting().c_str());
  st = ucp_worker_get_efd(w->worker_, &w->efd_);
  if (st != UCS_OK)
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx': ucp_worker_get_efd: %s",
                      rank, ucxStatusText(st));
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(w->worker_, &addr, &len);
  if (st != UCS_OK)
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx': ucp_worker_get_address: %s",
                      rank, ucxStatusText(st));
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(addr);
  w->address_.assign(bytes, bytes + len);
  ucp_worker_release_address(w->worker_, addr);
  *out = std::move(w);
  return mixcclSuccess;
}

UcxWorker::~UcxWorker() {
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

bool UcxWorker::progress() {
  bool any = false;
  // Bounded: a flood (a stranger's messages, say) must not keep one round from ending.
  for (int i = 0; i < 64 && ucp_worker_progress(worker_) != 0; ++i) any = true;
  return any;
}

bool UcxWorker::arm() {
  ucs_status_t st = ucp_worker_arm(worker_);
  // UCS_ERR_BUSY: events arrived since the last progress. Any other failure: do not block on
  // an fd that may never be signalled (the proxy's 100 ms bound still applies, but spinning
  // is the safe answer here).
  return st == UCS_OK;
}

}  // namespace mixccl
