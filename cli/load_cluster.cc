#include "cli/load_cluster.h"

#include <dlfcn.h>

#include <string>

#include "base/executable_path.h"
#include "base/strings.h"

// Linked in where the program links the cluster layer; null in `runnel`.
#pragma weak runnel_cluster_module

namespace runnel::cli {
namespace {

// The module's path: beside this program's executable.
std::string ModulePath() {
  const std::string exe = ExecutablePath();
  const size_t slash = exe.rfind('/');
  return (slash == std::string::npos ? "." : exe.substr(0, slash)) +
         "/runnel_cluster.so";
}

absl::StatusOr<const ClusterModule*> Load() {
  if (&runnel_cluster_module != nullptr) return runnel_cluster_module();
  const std::string path = ModulePath();
  // RTLD_NOW: a symbol the module needs and this program lacks fails
  // here, in words, rather than at its first call.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("cannot load the cluster layer: ", ::dlerror()));
  }
  using Entry = const ClusterModule* (*)();
  auto entry =
      reinterpret_cast<Entry>(::dlsym(handle, "runnel_cluster_module"));
  if (entry == nullptr) {
    return absl::FailedPreconditionError(
        StrCat("cannot load the cluster layer: ", path,
               " has no entry point runnel_cluster_module (a module of another "
               "build?)"));
  }
  return entry();
}

}  // namespace

absl::StatusOr<const ClusterModule*> LoadCluster() {
  static const absl::StatusOr<const ClusterModule*> loaded = Load();
  return loaded;
}

}  // namespace runnel::cli
