// Gradient functions of the index ops (framework/ops/index_ops.cc). Each
// gather's adjoint is the matching scatter with reduction "add" (an
// element or slice read twice gets both gradients), and each scatter's the
// matching gather. A scatter's "mul", "max" and "min" have no gradient here:
// asking for one is an error naming the reduction.
#include "base/strings.h"
#include "common_runtime/gradients.h"

namespace runnel {
namespace {

AttrMap Along(const GradBuilder& g, const char* reduction) {
  return {{"axis", g.attr_or<int64_t>("axis", 0)},
          {"reduction", std::string(reduction)}};
}

AttrMap Nd(const GradBuilder& g, const char* reduction) {
  return {{"batch_dims", g.attr_or<int64_t>("batch_dims", 0)},
          {"reduction", std::string(reduction)}};
}

// scatter_*(data, indices, updates): with "none", data's gradient is dy
// where no update landed and the updates' is dy where each did (the kernels
// refuse two updates of one place, so each lands); with "add", data's is dy.
Grads ScatterGrad(GradBuilder& g, const Grads& dy, const char* scatter,
                  const char* gather, bool nd) {
  const std::string how = g.attr_or<std::string>("reduction", "none");
  if (how != "none" && how != "add") {
    g.Fail(absl::UnimplementedError(
        StrCat(scatter, " with reduction \"", how,
               "\" has no gradient; only \"none\" and \"add\" do")));
    return {{}, {}, {}};
  }
  AttrMap gather_attrs =
      nd ? AttrMap{{"batch_dims", g.attr_or<int64_t>("batch_dims", 0)}}
         : AttrMap{{"axis", g.attr_or<int64_t>("axis", 0)}};
  NodeOut dupdates = g.Op(gather, {dy[0], g.x(1)}, std::move(gather_attrs));
  if (how == "add") return {dy[0], {}, dupdates};
  NodeOut ddata = g.Op(scatter, {dy[0], g.x(1), g.ZerosLike(g.x(2))},
                       nd ? Nd(g, "none") : Along(g, "none"));
  return {ddata, {}, dupdates};
}

RUNNEL_REGISTER_GRADIENT("gather_elements",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.Op("scatter_elements",
                                        {g.ZerosLike(g.x(0)), g.x(1), dy[0]},
                                        Along(g, "add")),
                                   {}};
                         });
RUNNEL_REGISTER_GRADIENT("gather_nd",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return {g.Op("scatter_nd",
                                        {g.ZerosLike(g.x(0)), g.x(1), dy[0]},
                                        Nd(g, "add")),
                                   {}};
                         });
RUNNEL_REGISTER_GRADIENT("scatter_elements",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return ScatterGrad(g, dy, "scatter_elements",
                                              "gather_elements", false);
                         });
RUNNEL_REGISTER_GRADIENT("scatter_nd",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           return ScatterGrad(g, dy, "scatter_nd", "gather_nd",
                                              true);
                         });
// Each value came from one position of x: its gradient goes back there.
RUNNEL_REGISTER_GRADIENT("top_k", [](GradBuilder& g, const Grads& dy) -> Grads {
  if (dy[0].node == nullptr) return {{}, {}};
  return {g.Op("scatter_elements", {g.ZerosLike(g.x(0)), g.y(1), dy[0]},
               {{"axis", g.attr_or<int64_t>("axis", -1)},
                {"reduction", std::string("add")}}),
          {}};
});
RUNNEL_NO_GRADIENT("nonzero");
// Which copy of a repeated value `values` stands for is a choice, so its
// gradient is refused; gathering x at the positions `unique_all` gives is
// differentiable, and says which.
RUNNEL_REGISTER_GRADIENT("unique_all",
                         [](GradBuilder& g, const Grads& dy) -> Grads {
                           if (dy[0].node != nullptr) {
                             g.Fail(absl::UnimplementedError(
                                 "unique_all's values have no gradient; "
                                 "gather x at its positions (the second "
                                 "output) to differentiate them"));
                           }
                           return {{}};
                         });

}  // namespace
}  // namespace runnel
