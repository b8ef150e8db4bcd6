// What every adaptor plugin needs at its ABI boundary: the thread's last error, exception
// guards, datatype sizes and names. Header-only and private to each plugin (plugins are built
// with hidden visibility, so each .so has its own copy and its own thread_local error).
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "mixccl_adaptor.h"

// Declares the table a plugin exports: a declaration inside extern "C" is extern, so the const
// definition that follows keeps external linkage; default visibility so dlsym finds it.
#define MIXCCL_EXPORT_ADAPTOR \
  extern "C" __attribute__((visibility("default"))) const mixcclAdaptor_v2_t mixcclAdaptor_v2

namespace mixccl_plugin {

inline std::string& lastErrorString() {
  static thread_local std::string s;
  return s;
}

// Records "<prefix>: <message>" as the calling thread's last error and returns code.
inline mixcclResult_t setError(mixcclResult_t code, const char* prefix, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
inline mixcclResult_t setError(mixcclResult_t code, const char* prefix, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  lastErrorString() = std::string(prefix) + ": " + buf;
  return code;
}

// Runs body() and turns any exception into an error code with a message: nothing crosses the
// C ABI. `what` names the entry for the message.
template <class Body>
mixcclResult_t guarded(const char* prefix, const char* what, mixcclResult_t onException,
                       Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return setError(onException, prefix, "%s: %s", what, e.what());
  } catch (...) {
    return setError(onException, prefix, "%s: unknown exception", what);
  }
}

inline size_t typeSize(mixcclDataType_t t) {
  switch (t) {
    case mixcclInt8: case mixcclUint8: case mixcclFloat8e4m3: case mixcclFloat8e5m2: return 1;
    case mixcclFloat16: case mixcclBfloat16: return 2;
    case mixcclInt32: case mixcclUint32: case mixcclFloat32: return 4;
    case mixcclInt64: case mixcclUint64: case mixcclFloat64: return 8;
    default: return 0;
  }
}

inline const char* typeName(mixcclDataType_t t) {
  static const char* const names[] = {"int8",  "uint8",   "int32",   "uint32",
                                      "int64", "uint64",  "float16", "float32",
                                      "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return (t >= 0 && t < mixcclNumTypes) ? names[t] : "invalid datatype";
}

inline const char* opName(mixcclRedOp_t op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  return (op >= 0 && op < mixcclNumOps) ? names[op] : "invalid op";
}

// MIXCCL_TIMEOUT_S (seconds, default 300): plugins read it themselves, not through libmixccl.
inline int timeoutSeconds() {
  const char* s = std::getenv("MIXCCL_TIMEOUT_S");
  if (s == nullptr || *s == '\0') return 300;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  return (end && *end == '\0' && v > 0 && v < 1000000) ? static_cast<int>(v) : 300;
}

}  // namespace mixccl_plugin

// Returns a non-success result at once (the callee has set the last error).
#define MIXCCL_PLUGIN_CHECK(call)                        \
  do {                                                   \
    mixcclResult_t mixccl_plugin_rc_ = (call);           \
    if (mixccl_plugin_rc_ != mixcclSuccess) return mixccl_plugin_rc_; \
  } while (0)

namespace mixccl_plugin {

// Base of a plugin communicator. commAbort may come from another thread while a call is in
// progress: every entry holds a reference for its duration, so the object outlives the calls
// that abort unblocks. Handles cross the ABI as static_cast<void*>(static_cast<CommBase*>(c)).
struct CommBase {
  std::atomic<int> refs{1};  // 1: the handle itself, released by commDestroy/commAbort
  std::atomic<bool> aborted{false};
  virtual ~CommBase() = default;
};

inline void releaseComm(CommBase* c) {
  if (c != nullptr && c->refs.fetch_sub(1) == 1) delete c;
}

class CommRef {
 public:
  explicit CommRef(void* comm) : c_(static_cast<CommBase*>(comm)) {
    if (c_) c_->refs.fetch_add(1);
  }
  ~CommRef() { releaseComm(c_); }
  CommRef(const CommRef&) = delete;
  CommRef& operator=(const CommRef&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(c_); }

 private:
  CommBase* c_;
};

}  // namespace mixccl_plugin
