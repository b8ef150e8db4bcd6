#include "core/coll_call.h"

#include "algo/reduce.h"

namespace mixccl {

void callBytes(const CollCall& call, int rank, int nranks, size_t* send, size_t* recv) {
  const CollKindSpec& s = call.spec();
  const size_t es = dataTypeSize(call.type);
  *send = s.send.elements(call.count, rank, nranks, call.root) * es;
  *recv = s.recv.elements(call.count, rank, nranks, call.root) * es;
}

CollDesc collDescOf(const CollCall& call) {
  const CollKindSpec& s = call.spec();
  CollDesc d;
  d.kind = (int32_t)call.kind;
  d.datatype = (int32_t)call.type;
  d.op = s.reduces ? (int32_t)call.op : -1;
  d.root = s.rooted ? call.root : -1;
  d.count = call.count;
  return d;
}

uint64_t callStampOf(const CollCall& call) { return encodeCallStamp(collDescOf(call)); }

std::string describeCollDesc(const CollDesc& d) {
  CollKind kind;
  std::string s = collKindFromInt(d.kind, &kind) ? collSpec(kind).apiName
                                                 : "an unknown collective " + std::to_string(d.kind);
  s += " (count " + std::to_string(d.count) + ", datatype ";
  s += isValidDataType(d.datatype) ? dataTypeName((mixcclDataType_t)d.datatype)
                                   : std::to_string(d.datatype).c_str();
  if (d.op >= 0) {
    s += ", op ";
    s += isValidRedOp(d.op) ? redOpName((mixcclRedOp_t)d.op) : std::to_string(d.op).c_str();
  }
  if (d.root >= 0) s += ", root " + std::to_string(d.root);
  s += ")";
  return s;
}

}  // namespace mixccl
