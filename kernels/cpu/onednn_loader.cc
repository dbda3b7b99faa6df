// oneDNN on first use. The programs do not link libdnnl: loading it (with
// the OpenMP and OpenCL runtimes it needs) took a tenth of the start-up of
// a script that computes no convolution or large product (issue 32). This
// file defines the library's C functions that oneDNN's C++ API (and
// gemm.cc) call, each with the declaration dnnl.h gives it; the first call
// loads the library and each function forwards to the library's own. When
// the library does not load, the call throws dnnl::error saying why, which
// DnnlStatus (onednn.h) turns into the kernel's error.
#include <dlfcn.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_version.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "base/strings.h"

namespace runnel {
namespace {

#define RN_DNNL_STR2(x) #x
#define RN_DNNL_STR(x) RN_DNNL_STR2(x)
// The library's soname, of the major version the headers are.
constexpr char kDnnlLibrary[] = "libdnnl.so." RN_DNNL_STR(DNNL_VERSION_MAJOR);

struct Loaded {
  void* handle = nullptr;
  std::string error;  // why it did not load
};

const Loaded& Load() {
  static const Loaded* loaded = [] {
    auto* l = new Loaded;
    l->handle = ::dlopen(kDnnlLibrary, RTLD_NOW | RTLD_LOCAL);
    if (l->handle == nullptr) {
      l->error = StrCat("cannot load ", kDnnlLibrary, ": ", ::dlerror());
    }
    return l;
  }();
  return *loaded;
}

// The library's own `name` (its dependencies' too: OpenMP's functions);
// null when the library did not load or has no such function.
void* Find(const char* name) {
  void* handle = Load().handle;
  return handle == nullptr ? nullptr : ::dlsym(handle, name);
}

// Find's function, of the type it is declared with; throws dnnl::error
// saying why when there is none.
template <typename F>
F Resolve(F /*declared*/, const char* name) {
  const Loaded& loaded = Load();
  if (loaded.handle == nullptr) {
    // dnnl::error keeps the pointer: the string lives as long as the program.
    throw dnnl::error(dnnl_runtime_error, loaded.error.c_str());
  }
  void* f = Find(name);
  if (f == nullptr) {
    thread_local std::string why;
    why = StrCat("cannot load ", kDnnlLibrary, ": ", ::dlerror());
    throw dnnl::error(dnnl_runtime_error, why.c_str());
  }
  return reinterpret_cast<F>(f);
}

}  // namespace
}  // namespace runnel

// Each forwarder resolves its function once (a throw leaves it unresolved,
// to be tried again).
#define RN_DNNL_FORWARD(name, ...)                        \
  static const auto real = runnel::Resolve(&name, #name); \
  return real(__VA_ARGS__)

extern "C" {

dnnl_status_t dnnl_engine_create(dnnl_engine_t* engine, dnnl_engine_kind_t kind,
                                 size_t index) {
  RN_DNNL_FORWARD(dnnl_engine_create, engine, kind, index);
}
dnnl_status_t dnnl_engine_destroy(dnnl_engine_t engine) {
  RN_DNNL_FORWARD(dnnl_engine_destroy, engine);
}
dnnl_status_t dnnl_stream_create(dnnl_stream_t* stream, dnnl_engine_t engine,
                                 unsigned flags) {
  RN_DNNL_FORWARD(dnnl_stream_create, stream, engine, flags);
}
dnnl_status_t dnnl_stream_destroy(dnnl_stream_t stream) {
  RN_DNNL_FORWARD(dnnl_stream_destroy, stream);
}
dnnl_status_t dnnl_stream_wait(dnnl_stream_t stream) {
  RN_DNNL_FORWARD(dnnl_stream_wait, stream);
}
dnnl_status_t dnnl_memory_desc_init_by_tag(dnnl_memory_desc_t* memory_desc,
                                           int ndims, const dnnl_dims_t dims,
                                           dnnl_data_type_t data_type,
                                           dnnl_format_tag_t tag) {
  RN_DNNL_FORWARD(dnnl_memory_desc_init_by_tag, memory_desc, ndims, dims,
                  data_type, tag);
}
int dnnl_memory_desc_equal(const dnnl_memory_desc_t* lhs,
                           const dnnl_memory_desc_t* rhs) {
  RN_DNNL_FORWARD(dnnl_memory_desc_equal, lhs, rhs);
}
dnnl_status_t dnnl_memory_create(dnnl_memory_t* memory,
                                 const dnnl_memory_desc_t* memory_desc,
                                 dnnl_engine_t engine, void* handle) {
  RN_DNNL_FORWARD(dnnl_memory_create, memory, memory_desc, engine, handle);
}
dnnl_status_t dnnl_memory_destroy(dnnl_memory_t memory) {
  RN_DNNL_FORWARD(dnnl_memory_destroy, memory);
}
dnnl_status_t dnnl_memory_get_engine(const_dnnl_memory_t memory,
                                     dnnl_engine_t* engine) {
  RN_DNNL_FORWARD(dnnl_memory_get_engine, memory, engine);
}
dnnl_status_t dnnl_memory_get_memory_desc(
    const_dnnl_memory_t memory, const dnnl_memory_desc_t** memory_desc) {
  RN_DNNL_FORWARD(dnnl_memory_get_memory_desc, memory, memory_desc);
}
dnnl_status_t dnnl_primitive_attr_create(dnnl_primitive_attr_t* attr) {
  RN_DNNL_FORWARD(dnnl_primitive_attr_create, attr);
}
dnnl_status_t dnnl_primitive_attr_destroy(dnnl_primitive_attr_t attr) {
  RN_DNNL_FORWARD(dnnl_primitive_attr_destroy, attr);
}
dnnl_status_t dnnl_primitive_attr_set_scratchpad_mode(
    dnnl_primitive_attr_t attr, dnnl_scratchpad_mode_t mode) {
  RN_DNNL_FORWARD(dnnl_primitive_attr_set_scratchpad_mode, attr, mode);
}
dnnl_status_t dnnl_primitive_desc_iterator_create(
    dnnl_primitive_desc_iterator_t* iterator, const_dnnl_op_desc_t op_desc,
    const_dnnl_primitive_attr_t attr, dnnl_engine_t engine,
    const_dnnl_primitive_desc_t hint_forward_primitive_desc) {
  RN_DNNL_FORWARD(dnnl_primitive_desc_iterator_create, iterator, op_desc, attr,
                  engine, hint_forward_primitive_desc);
}
dnnl_primitive_desc_t dnnl_primitive_desc_iterator_fetch(
    const_dnnl_primitive_desc_iterator_t iterator) {
  RN_DNNL_FORWARD(dnnl_primitive_desc_iterator_fetch, iterator);
}
dnnl_status_t dnnl_primitive_desc_iterator_destroy(
    dnnl_primitive_desc_iterator_t iterator) {
  RN_DNNL_FORWARD(dnnl_primitive_desc_iterator_destroy, iterator);
}
const dnnl_memory_desc_t* dnnl_primitive_desc_query_md(
    const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index) {
  RN_DNNL_FORWARD(dnnl_primitive_desc_query_md, primitive_desc, what, index);
}
dnnl_status_t dnnl_primitive_desc_destroy(
    dnnl_primitive_desc_t primitive_desc) {
  RN_DNNL_FORWARD(dnnl_primitive_desc_destroy, primitive_desc);
}
dnnl_status_t dnnl_reorder_primitive_desc_create(
    dnnl_primitive_desc_t* reorder_primitive_desc,
    const dnnl_memory_desc_t* src_desc, dnnl_engine_t src_engine,
    const dnnl_memory_desc_t* dst_desc, dnnl_engine_t dst_engine,
    const_dnnl_primitive_attr_t attr) {
  RN_DNNL_FORWARD(dnnl_reorder_primitive_desc_create, reorder_primitive_desc,
                  src_desc, src_engine, dst_desc, dst_engine, attr);
}
dnnl_status_t dnnl_primitive_create(
    dnnl_primitive_t* primitive, const_dnnl_primitive_desc_t primitive_desc) {
  RN_DNNL_FORWARD(dnnl_primitive_create, primitive, primitive_desc);
}
dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t primitive,
                                     dnnl_stream_t stream, int nargs,
                                     const dnnl_exec_arg_t* args) {
  RN_DNNL_FORWARD(dnnl_primitive_execute, primitive, stream, nargs, args);
}
dnnl_status_t dnnl_primitive_destroy(dnnl_primitive_t primitive) {
  RN_DNNL_FORWARD(dnnl_primitive_destroy, primitive);
}
dnnl_status_t dnnl_dilated_convolution_forward_desc_init(
    dnnl_convolution_desc_t* conv_desc, dnnl_prop_kind_t prop_kind,
    dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t* src_desc,
    const dnnl_memory_desc_t* weights_desc, const dnnl_memory_desc_t* bias_desc,
    const dnnl_memory_desc_t* dst_desc, const dnnl_dims_t strides,
    const dnnl_dims_t dilates, const dnnl_dims_t padding_l,
    const dnnl_dims_t padding_r) {
  RN_DNNL_FORWARD(dnnl_dilated_convolution_forward_desc_init, conv_desc,
                  prop_kind, alg_kind, src_desc, weights_desc, bias_desc,
                  dst_desc, strides, dilates, padding_l, padding_r);
}
dnnl_status_t dnnl_dilated_convolution_backward_data_desc_init(
    dnnl_convolution_desc_t* conv_desc, dnnl_alg_kind_t alg_kind,
    const dnnl_memory_desc_t* diff_src_desc,
    const dnnl_memory_desc_t* weights_desc,
    const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides,
    const dnnl_dims_t dilates, const dnnl_dims_t padding_l,
    const dnnl_dims_t padding_r) {
  RN_DNNL_FORWARD(dnnl_dilated_convolution_backward_data_desc_init, conv_desc,
                  alg_kind, diff_src_desc, weights_desc, diff_dst_desc, strides,
                  dilates, padding_l, padding_r);
}
dnnl_status_t dnnl_dilated_convolution_backward_weights_desc_init(
    dnnl_convolution_desc_t* conv_desc, dnnl_alg_kind_t alg_kind,
    const dnnl_memory_desc_t* src_desc,
    const dnnl_memory_desc_t* diff_weights_desc,
    const dnnl_memory_desc_t* diff_bias_desc,
    const dnnl_memory_desc_t* diff_dst_desc, const dnnl_dims_t strides,
    const dnnl_dims_t dilates, const dnnl_dims_t padding_l,
    const dnnl_dims_t padding_r) {
  RN_DNNL_FORWARD(dnnl_dilated_convolution_backward_weights_desc_init,
                  conv_desc, alg_kind, src_desc, diff_weights_desc,
                  diff_bias_desc, diff_dst_desc, strides, dilates, padding_l,
                  padding_r);
}
dnnl_status_t dnnl_sgemm(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N,
                         dnnl_dim_t K, float alpha, const float* A,
                         dnnl_dim_t lda, const float* B, dnnl_dim_t ldb,
                         float beta, float* C, dnnl_dim_t ldc) {
  RN_DNNL_FORWARD(dnnl_sgemm, transa, transb, M, N, K, alpha, A, lda, B, ldb,
                  beta, C, ldc);
}

// OpenMP's, which oneDNN runs on (onednn.h keeps it single-threaded); it
// comes with the library. They do not throw: when the library did not load
// there is no team to size, and the oneDNN call that follows says why.
int omp_get_max_threads() noexcept {
  static const auto real = reinterpret_cast<decltype(&omp_get_max_threads)>(
      runnel::Find("omp_get_max_threads"));
  return real == nullptr ? 1 : real();
}
void omp_set_num_threads(int n) noexcept {
  static const auto real = reinterpret_cast<decltype(&omp_set_num_threads)>(
      runnel::Find("omp_set_num_threads"));
  if (real != nullptr) real(n);
}

}  // extern "C"
