// What the builtins' files share (interpreter/builtins/*.cc): argument
// readers beyond builtins.h's, parameter and op-backed builtin makers, and
// each family's table. Not for code outside the builtins.
#ifndef RUNNEL_INTERPRETER_BUILTINS_INTERNAL_H_
#define RUNNEL_INTERPRETER_BUILTINS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/attr_value.h"
#include "framework/tensor.h"
#include "interpreter/builtins.h"
#include "interpreter/value.h"

namespace runnel::interp {

class Interpreter;

using Args = CallArgs;
using Result = absl::StatusOr<Value>;

inline Value None() { return Value(); }

// ---- arguments (args.cc) ----------------------------------------------------

// An int or a list/tuple/vector of ints.
absl::StatusOr<std::vector<int64_t>> IntsArg(Interpreter& in, const Args& a,
                                             int i);
// Sets attribute `attr` from an int or int list argument, unless it is none.
absl::Status AxisAttr(Interpreter& in, const Args& a, int i, AttrMap* attrs,
                      const std::string& attr = "axis");
// Whether every element of an integer tensor fits in i32.
bool FitsI32(const Tensor& t);
// A shape argument: an int, a list of ints, or an integer vector tensor
// (symbolic too, e.g. shape_of(x)); gives an i32 vector value.
Result ShapeArg(Interpreter& in, const Args& a, int i);
// The shape of a tensor to make (zeros, fill, random_*): as ShapeArg, with
// every dimension known.
Result SizesArg(Interpreter& in, const Args& a, int i);
// A tensor value's dtype and shape as known while building (a symbolic
// one's static shape); nullopt for a value that is not a tensor.
std::optional<TensorSpec> SpecOf(const Value& v);
// A list or tuple of tensors (concat, stack).
absl::StatusOr<std::vector<Value>> TensorsArg(Interpreter& in, const Args& a,
                                              int i);

// ---- making builtins (op_builtins.cc) ---------------------------------------

// A parameter without, and with, a default.
BuiltinParam P(std::string name);
BuiltinParam P(std::string name, Value def);
// The builtin of op `op`: its parameters and defaults from the OpDef.
Builtin FromOp(const std::string& op);
// assign, assign_add, assign_sub on a var or state.
Result AssignFn(const std::string& op, Interpreter& in, Args& a);

// ---- the families, each adding its builtins to the table ------------------

void AddCreation(std::vector<Builtin>& b);      // op_builtins.cc
void AddElementWise(std::vector<Builtin>& b);   // op_builtins.cc
void AddReductions(std::vector<Builtin>& b);    // op_builtins.cc
void AddShape(std::vector<Builtin>& b);         // op_builtins.cc
void AddNN(std::vector<Builtin>& b);            // op_builtins.cc
void AddState(std::vector<Builtin>& b);         // op_builtins.cc
void AddAutodiff(std::vector<Builtin>& b);      // graph_builtins.cc
void AddGraphControl(std::vector<Builtin>& b);  // graph_builtins.cc
void AddLoops(std::vector<Builtin>& b);         // graph_builtins.cc
void AddCheckpoints(std::vector<Builtin>& b);   // graph_builtins.cc
void AddHost(std::vector<Builtin>& b);          // host_builtins.cc
void AddData(std::vector<Builtin>& b);          // data_builtins.cc
void AddEinsum(std::vector<Builtin>& b);        // einsum.cc

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_BUILTINS_INTERNAL_H_
