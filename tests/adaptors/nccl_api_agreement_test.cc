// The nccl adaptor's hand-typed declarations (nccl_api_fallback.h, used where a build has no
// CUDA or NCCL headers) agree with the real cuda_runtime_api.h and nccl.h: every bound function
// has the same shape (return and parameter kinds and sizes, pointees, const) and every constant
// the adaptor passes has the same value. Built only where the real headers are found.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "nccl_api_real.h"  // first: it takes the CUDA function types before nccl.h
#include "nccl_api_fallback.h"

namespace {

template <class T, class = void>
struct IsComplete : std::false_type {};
template <class T>
struct IsComplete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

template <class T>
std::string shapeOf();

template <class R, class... A>
std::string functionShape(R (*)(A...)) {
  std::string s = shapeOf<R>() + "(";
  ((s += shapeOf<A>() + ","), ...);
  if (sizeof...(A) > 0) s.pop_back();
  return s + ")";
}

// What a call through a dlsym'd pointer depends on: kinds and sizes, what pointers point to,
// const. Names do not matter (cudaStream_t is CUstream_st* in both).
template <class T>
std::string shapeOf() {
  using U = std::remove_cv_t<T>;
  const std::string c = std::is_const_v<T> ? "const " : "";
  if constexpr (std::is_void_v<U>) {
    return c + "void";
  } else if constexpr (std::is_pointer_v<U>) {
    using P = std::remove_pointer_t<U>;
    if constexpr (std::is_function_v<P>) return c + "fn " + functionShape(static_cast<U>(nullptr));
    else return c + "ptr(" + shapeOf<P>() + ")";
  } else if constexpr (std::is_enum_v<U>) {
    return c + "enum" + std::to_string(sizeof(U));
  } else if constexpr (std::is_integral_v<U>) {
    return c + (std::is_signed_v<U> ? "int" : "uint") + std::to_string(sizeof(U));
  } else if constexpr (std::is_floating_point_v<U>) {
    return c + "float" + std::to_string(sizeof(U));
  } else if constexpr (IsComplete<U>::value) {
    return c + "struct" + std::to_string(sizeof(U));
  } else {
    return c + "opaque";
  }
}

template <class F>
std::string shape() {
  return functionShape(static_cast<F>(nullptr));
}

}  // namespace

namespace real = mixccl_nccl::real;
namespace fallback = mixccl_nccl::fallback;

TEST(NcclApiAgreement, ShapesTellMismatchesApart) {
  // The comparison below can fail: these differ from each other.
  EXPECT_NE(shape<int (*)(void**, size_t)>(), shape<int (*)(void**, int)>());
  EXPECT_NE(shape<int (*)(int*)>(), shape<int (*)(size_t*)>());
  EXPECT_NE(shape<int (*)(const void*)>(), shape<int (*)(void*)>());
  EXPECT_NE(shape<int (*)(real::ncclUniqueId)>(), shape<int (*)(real::ncclUniqueId*)>());
  EXPECT_NE(shape<real::cudaError_t (*)()>(), shape<long (*)()>());
  EXPECT_EQ(shape<real::cudaMalloc_fn>(), "enum4(ptr(ptr(void)),uint8)");
}

TEST(NcclApiAgreement, RuntimeFunctions) {
#define MIXCCL_CHECK_RUNTIME(s) \
  EXPECT_EQ(shape<fallback::cuda##s##_fn>(), shape<real::cuda##s##_fn>()) << "cuda" #s;
  MIXCCL_NCCL_RUNTIME_FUNCTIONS(MIXCCL_CHECK_RUNTIME)
#undef MIXCCL_CHECK_RUNTIME
}

TEST(NcclApiAgreement, LibraryFunctions) {
#define MIXCCL_CHECK_LIBRARY(f) \
  EXPECT_EQ(shape<fallback::f##_fn>(), shape<real::f##_fn>()) << #f;
  MIXCCL_NCCL_LIBRARY_FUNCTIONS(MIXCCL_CHECK_LIBRARY)
  MIXCCL_NCCL_OPTIONAL_LIBRARY_FUNCTIONS(MIXCCL_CHECK_LIBRARY)
#undef MIXCCL_CHECK_LIBRARY
}

TEST(NcclApiAgreement, Constants) {
  EXPECT_EQ(static_cast<int>(fallback::cudaSuccess), static_cast<int>(real::cudaSuccess));
  EXPECT_EQ(static_cast<int>(fallback::cudaErrorNotReady),
            static_cast<int>(real::cudaErrorNotReady));
  EXPECT_EQ(static_cast<int>(fallback::cudaMemcpyHostToHost), static_cast<int>(cudaMemcpyHostToHost));
  EXPECT_EQ(static_cast<int>(fallback::cudaMemcpyHostToDevice),
            static_cast<int>(cudaMemcpyHostToDevice));
  EXPECT_EQ(static_cast<int>(fallback::cudaMemcpyDeviceToHost),
            static_cast<int>(cudaMemcpyDeviceToHost));
  EXPECT_EQ(static_cast<int>(fallback::cudaMemcpyDeviceToDevice),
            static_cast<int>(cudaMemcpyDeviceToDevice));
  EXPECT_EQ(fallback::kStreamNonBlocking, real::kStreamNonBlocking);
  EXPECT_EQ(fallback::kEventDisableTiming, real::kEventDisableTiming);
  EXPECT_EQ(static_cast<int>(fallback::ncclSuccess), static_cast<int>(real::ncclSuccess));
  EXPECT_EQ(fallback::kUniqueIdBytes, real::kUniqueIdBytes);
  EXPECT_EQ(sizeof(fallback::ncclUniqueId), sizeof(real::ncclUniqueId));
}
