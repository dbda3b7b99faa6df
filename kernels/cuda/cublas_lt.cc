#include "kernels/cuda/cublas_lt.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "base/strings.h"

namespace runnel {
namespace {

constexpr char kLibrary[] = "libcublasLt.so.13";
std::atomic<const CublasLt*> g_loaded{nullptr};

absl::StatusOr<const CublasLt*> Load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("cannot load cuBLASLt: ", dlerror()));
  }
  // Kept to the end of the process, like the library.
  static CublasLt* const lt = new CublasLt;
#define RN_LT_FN(name)                                                      \
  do {                                                                      \
    lt->name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));      \
    if (lt->name == nullptr) {                                              \
      return absl::FailedPreconditionError(                                 \
          StrCat(kLibrary, " has no ", #name, " (older than cuBLAS 13?)")); \
    }                                                                       \
  } while (0)
  RN_CUBLAS_LT_FUNCTIONS(RN_LT_FN)
#undef RN_LT_FN
  return lt;
}

}  // namespace

absl::StatusOr<const CublasLt*> LoadCublasLt() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (const CublasLt* lt = g_loaded.load()) return lt;
  absl::StatusOr<const CublasLt*> lt = Load();
  if (lt.ok()) g_loaded.store(*lt);
  return lt;
}

const CublasLt* LoadedCublasLt() { return g_loaded.load(); }

}  // namespace runnel
