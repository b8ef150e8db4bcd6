#include "transport/net_transports.h"

#include "base/error.h"
#ifdef MIXCCL_HAVE_UCX
#include "transport/ucx/ucx_transport.h"
#endif

namespace mixccl {

const std::vector<std::string>& networkTransportNames() {
  // ofi joins here (after ucx) when it is built.
  static const std::vector<std::string> names = {"ucx"};
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
  // ofi: if (name == "ofi") { ... }
  return raiseError(mixcclInvalidUsage, "rank %d: transport '%s' is not built into this "
                    "mixccl (configure with -DMIXCCL_WITH_%s=ON)", rank, name.c_str(),
                    name == "ucx" ? "UCX" : name == "ofi" ? "OFI" : "?");
}

}  // namespace mixccl
