#include "types.h"

#include <c10/util/Exception.h>

namespace mixccl_torch {

mixcclDataType_t mixcclTypeOf(at::ScalarType dtype, const char* opName) {
  switch (dtype) {
    case at::kFloat: return mixcclFloat32;
    case at::kDouble: return mixcclFloat64;
    case at::kHalf: return mixcclFloat16;
    case at::kBFloat16: return mixcclBfloat16;
    case at::kChar: return mixcclInt8;
    case at::kByte: return mixcclUint8;
    case at::kBool: return mixcclUint8;
    case at::kInt: return mixcclInt32;
    case at::kLong: return mixcclInt64;
    case at::kUInt32: return mixcclUint32;
    case at::kUInt64: return mixcclUint64;
    case at::kFloat8_e4m3fn: return mixcclFloat8e4m3;
    case at::kFloat8_e5m2: return mixcclFloat8e5m2;
    default: break;
  }
  TORCH_CHECK(false, "mixccl ", opName, ": reductions on dtype ", c10::toString(dtype),
              " are not supported (float32/64, float16, bfloat16, float8_e4m3fn, float8_e5m2, "
              "int8/32/64, uint8/32/64, bool are)");
}

namespace {

bool isIntegral(at::ScalarType t) { return at::isIntegralType(t, /*includeBool=*/true); }

const char* opNameOf(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

}  // namespace

Reduction reductionFor(const c10d::ReduceOp& op, at::ScalarType dtype, const char* opName) {
  mixcclTypeOf(dtype, opName);  // refuses unsupported dtypes first
  Reduction r;
  const c10d::ReduceOp::RedOpType kind = op.op_;
  if (dtype == at::kBool) {
    switch (kind) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::BOR: r.op = mixcclMax; return r;
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::BAND: r.op = mixcclMin; return r;
      case c10d::ReduceOp::BXOR: r.kind = Reduction::kBitwise; r.bitwise = kind; return r;
      default: break;
    }
    TORCH_CHECK(false, "mixccl ", opName, ": ReduceOp.", opNameOf(kind), " is not defined on bool");
  }
  switch (kind) {
    case c10d::ReduceOp::SUM: r.op = mixcclSum; return r;
    case c10d::ReduceOp::PRODUCT: r.op = mixcclProd; return r;
    case c10d::ReduceOp::MIN: r.op = mixcclMin; return r;
    case c10d::ReduceOp::MAX: r.op = mixcclMax; return r;
    case c10d::ReduceOp::AVG: r.op = mixcclAvg; return r;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(isIntegral(dtype), "mixccl ", opName, ": ReduceOp.", opNameOf(kind),
                  " needs an integer or bool tensor, got ", c10::toString(dtype));
      r.kind = Reduction::kBitwise;
      r.bitwise = kind;
      return r;
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(at::isFloatingType(dtype), "mixccl ", opName,
                  ": ReduceOp.PREMUL_SUM needs a floating-point tensor, got ", c10::toString(dtype));
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement, "mixccl ", opName, ": ReduceOp.PREMUL_SUM without its factor");
      r.kind = Reduction::kPreMulSum;
      r.factor = supplement->tensor_factor.defined()
                     ? supplement->tensor_factor.to(at::kCPU).to(at::kDouble).item<double>()
                     : supplement->double_factor;
      return r;
    }
    default: break;
  }
  TORCH_CHECK(false, "mixccl ", opName, ": ReduceOp.", opNameOf(kind), " is not supported");
}

const at::Tensor& onlyTensor(const std::vector<at::Tensor>& tensors, const char* opName) {
  TORCH_CHECK(tensors.size() == 1, "mixccl ", opName, ": expects one tensor, got ",
              tensors.size());
  return tensors[0];
}

void checkMatches(const at::Tensor& t, at::ScalarType dtype, int64_t numel, const char* opName,
                  const char* what) {
  TORCH_CHECK(t.scalar_type() == dtype, "mixccl ", opName, ": ", what, " has dtype ",
              c10::toString(t.scalar_type()), ", expected ", c10::toString(dtype));
  TORCH_CHECK(t.numel() == numel, "mixccl ", opName, ": ", what, " has ", t.numel(),
              " elements, expected ", numel);
}

}  // namespace mixccl_torch
