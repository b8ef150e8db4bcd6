// The transports every ShrinkTest runs over: socket and shm, and where they are built ucx with
// UCX_TLS=tcp and ofi with the tcp;ofi_rxm provider. UCX and libfabric read these variables in
// each rank at init, so they are set before main; they affect no other transport.
#include "shrink_harness.h"

namespace shrinktest {
namespace {

#ifdef MIXCCL_TEST_HAVE_UCX
const bool kUcxTlsSet = [] { return setenv("UCX_TLS", "tcp", 1) == 0; }();
#endif
#ifdef MIXCCL_TEST_HAVE_OFI
const bool kOfiProviderSet = [] { return setenv("MIXCCL_OFI_PROVIDER", "tcp;ofi_rxm", 1) == 0; }();
#endif

const char* const kNets[] = {
    "socket", "shm",
#ifdef MIXCCL_TEST_HAVE_UCX
    "ucx",
#endif
#ifdef MIXCCL_TEST_HAVE_OFI
    "ofi",
#endif
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(Nets, ShrinkTest, ::testing::ValuesIn(kNets),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace shrinktest
