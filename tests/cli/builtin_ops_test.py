#!/usr/bin/env python3
"""The builtins named after an op agree with its OpDef (issue 30): the op's
inputs are the builtin's first parameters, in order; an attribute the
builtin exposes has the op's default; and every difference of name or
presence is one of the few written down below, so a new one fails here
until it is either fixed or explained.

    builtin_ops_test.py RUNNEL
"""
import json
import subprocess
import sys

# How a builtin names an op's input or attribute, where not the same.
# `ref` inputs are the language's `var` (the variable the op updates).
RENAMES = {
    "gather": {"params": "x"},
    "softmax": {"logits": "x"},
    "log_softmax": {"logits": "x"},
    "random_uniform": {"minval": "min", "maxval": "max"},
    "dynamic_partition": {"num_partitions": "n"},
    "split": {"num": "n"},
    "assign_add": {"delta": "value"},
    "assign_sub": {"delta": "value"},
    "sync_advance": {"ref": "step_var"},
    "sync_barrier": {"ref": "step_var"},
    "read_idx": {"files": "paths"},
}
# Attributes a builtin sets itself rather than taking them.
SET_BY_BUILTIN = {
    "argmax": {"keepdims"},  # always false, as numpy's argmax
    "argmin": {"keepdims"},
    "queue": {"components", "queue"},  # from dtypes= and the name
    "enqueue": {"components"}, "enqueue_many": {"components"},
    "dequeue": {"components"}, "dequeue_many": {"components"},
    "lstm_sequence": {"bias"},  # whether b is given
}
# Parameters of the language only: a list for a variadic input, dtypes
# and shapes that become indexed attributes, a name for a shared queue.
LANGUAGE_ONLY = {
    "concat": {"xs"}, "stack": {"xs"}, "dynamic_stitch": {"indices"},
    "enqueue": {"x"}, "enqueue_many": {"x"},
    "queue": {"dtypes", "shapes", "name"},
    "fill": {"dtype"},  # the dtype the value is cast to first
    # The variadic b_then_lengths: the bias and the lengths, each optional.
    "lstm_sequence": {"lengths", "b"},
}
# Defaults the language writes as none where the op has a sentinel.
NONE_IS = {
    ("read_idx", "epochs"): "0",  # none: no end; the op's 0
}


# Defaults that are one value written two ways.
def same_default(op_default, builtin_default, attr, op):
    if builtin_default is None:
        return True  # the builtin requires it: stricter, never different
    if op_default is None:
        return builtin_default == "none"  # absent either way
    if builtin_default == "none" and NONE_IS.get((op, attr)) == op_default:
        return True
    if attr == "seed" and op_default == "-1":
        return builtin_default == "none"  # -1: no seed
    try:
        return float(op_default) == float(builtin_default)
    except ValueError:
        return op_default == builtin_default


def main():
    out = subprocess.run([sys.argv[1], "ops", "--json"], check=True,
                         capture_output=True, text=True).stdout
    catalog = json.loads(out)
    ops = {o["name"]: o for o in catalog["ops"]}
    problems, checked = [], 0
    for b in catalog["builtins"]:
        op = ops.get(b["name"])
        # Only a builtin that applies the op of its name (`exit(code)` is
        # the host's, not the loops' `exit` op).
        if op is None or op["name"] not in b.get("ops", []):
            continue
        checked += 1
        name = op["name"]
        renames = RENAMES.get(name, {})

        def lang(n):
            if n in renames:
                return renames[n]
            if n == "ref":
                return "var"
            if n.startswith("ref_"):
                return n[4:]
            return n

        params = [p["name"] for p in b["params"]]
        defaults = {p["name"]: p.get("default") for p in b["params"]}
        inputs = [lang(i) for i in op["inputs"]]
        if op["variadic"]:
            inputs = inputs[:-1]
        if params[:len(inputs)] != inputs:
            problems.append(f"{name}: inputs {inputs}, parameters {params}")
        attrs = {}
        for a in op["attrs"]:
            if a["name"].endswith("_<i>"):
                continue
            p = lang(a["name"])
            attrs[p] = a.get("default")
            if p in defaults:
                if not same_default(a.get("default"), defaults[p], a["name"],
                                    name):
                    problems.append(
                        f"{name}: {p} defaults to {a.get('default')} in the "
                        f"op but {defaults[p]} in the builtin")
            elif a["name"] not in SET_BY_BUILTIN.get(name, set()):
                problems.append(f"{name}: attribute {a['name']} is no "
                                "parameter of the builtin")
        for p in params:
            if (p not in inputs and p not in attrs and
                    p not in LANGUAGE_ONLY.get(name, set()) and
                    not (op["variadic"] and p == lang(op["inputs"][-1]))):
                problems.append(f"{name}: parameter {p} is neither an input "
                                "nor an attribute of the op")
    if checked < 40:
        problems.append(f"only {checked} builtins named after an op")
    if problems:
        print("FAIL\n" + "\n".join(problems))
        return 1
    print(f"PASS: {checked} builtins agree with their ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
