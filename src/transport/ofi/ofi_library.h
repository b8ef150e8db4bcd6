// libfabric, opened on first use instead of linked. Loading libfabric.so.1 runs the
// constructors of every provider library it depends on; Debian's pulls in PSM's
// libinfinipath, whose constructor sleeps: about 210 ms per process on the machines this was
// measured on (docs/transports.md, "libfabric"). Linked, every program using mixccl paid that
// at start-up, ofi or not; opened here, only a communicator that chooses ofi does.
//
// Only the five functions libfabric exports are called through this table; everything else
// (fi_domain, fi_tsend, fi_cq_read, ...) is an inline call through the objects' own operation
// tables and needs no symbol.
#pragma once

#include <rdma/fabric.h>

#include "base/result.h"

namespace mixccl {

// Opens libfabric.so.1 once per process (thread-safe). Later calls return the first outcome;
// a failure says what dlopen said, for the rank named.
Result loadLibfabric(int rank);

// The exported functions, valid after loadLibfabric succeeded.
int ofiGetinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
               const fi_info* hints, fi_info** info);
void ofiFreeinfo(fi_info* info);
fi_info* ofiDupinfo(const fi_info* info);  // nullptr: a fresh, empty fi_info (fi_allocinfo)
int ofiFabric(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
// fi_strerror's text; a fixed text while libfabric is not loaded.
const char* ofiStrerror(int errnum);

}  // namespace mixccl
