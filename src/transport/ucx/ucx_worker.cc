#include "transport/ucx/ucx_worker.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/error.h"

namespace mixccl {

const char* ucxStatusText(ucs_status_t s) { return ucs_status_string(s); }

std::string ucxEndpointTransports(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return "";
  ucp_ep_print_info(ep, f);
  fclose(f);
  // Lines like "#   lane[0]:  0:tcp/lo.0 md[0] -> ...": the name between "N:" and "/".
  std::vector<std::string> names;
  std::string all(text ? text : "", size);
  free(text);
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

}  // namespace

Result UcxWorker::create(int rank, int nranks, std::shared_ptr<UcxWorker>* out) {
  std::shared_ptr<UcxWorker> w(new UcxWorker);
  ucp_config_t* config = nullptr;
  // NULL prefix/file: UCX reads UCX_* from the environment itself (UCX_TLS, UCX_NET_DEVICES).
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return raiseError(mixcclSystemError, "rank %d: transport 'ucx': ucp_config_read failed: %s "
                      "(check the UCX_* variables)", rank, ucxStatusText(st));
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
