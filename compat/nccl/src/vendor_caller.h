// Calls from NVIDIA's NCCL to its own exported functions. NCCL calls some of them itself
// (ncclCommEnsureReady, before every collective, calls ncclCommGetAsyncError). Where NCCL sits in
// the process's global scope behind the shim (the shim preloaded, and torch linked to
// libnccl.so.2 loads NVIDIA's too), the dynamic linker binds those calls to the shim, which then
// gets NCCL's own communicators: on a GPU every collective of the nccl adaptor under torch failed
// with ncclInvalidUsage. The shim's communicator queries hand such calls back to the caller's
// own definition. (An adaptor that opens NCCL itself under the shim uses RTLD_DEEPBIND instead;
// that cannot help a copy that is already loaded.)
#pragma once

namespace nccl_shim {

// The definition of `name` in the library that contains `caller` (a return address), when that
// library is not the shim and defines `name` itself; else nullptr (the caller is the user).
void* vendorOwnDefinition(const char* name, const void* caller);

}  // namespace nccl_shim
