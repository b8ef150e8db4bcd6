#include "transport/net_transports.h"

#include "base/env.h"
#include "base/error.h"
#ifdef MIXCCL_HAVE_OFI
#include "transport/ofi/ofi_transport.h"
#endif
#ifdef MIXCCL_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif

namespace mixccl {

const std::vector<std::string>& networkTransportNames() {
  // In the order auto prefers them (net_choice.cc).
  static const std::vector<std::string> names = {"ucx", "ofi"};
  return names;
}

Result makeNetworkTransport(const std::string& name, int rank, std::vector<bool> serve,
                            std::unique_ptr<Transport>* out) {
#ifdef MIXCCL_HAVE_UCX
  if (name == "ucx") {
    out->reset(new UcxTransport(std::move(serve)));
    return mixcclSuccess;
  }
#endif
#ifdef MIXCCL_HAVE_OFI
  if (name == "ofi") {
    out->reset(new OfiTransport(env().ofiProvider, std::move(serve)));
    return mixcclSuccess;
  }
#endif
  return raiseError(mixcclInvalidUsage, "rank %d: transport '%s' is not built into this "
                    "mixccl (configure with -DMIXCCL_WITH_%s=ON)", rank, name.c_str(),
                    name == "ucx" ? "UCX" : name == "ofi" ? "OFI" : "?");
}

}  // namespace mixccl
