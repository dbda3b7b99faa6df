#!/usr/bin/env bash
# Builds Runnel with CUDA here (Release, for any x86-64) and puts into
# OUT_DIR (default .gpu/, which git ignores through .git/info/exclude) what
# a GPU machine without our Debian packages needs to run it: the `runnel`
# binary, the GPU test binary, the shared libraries they load that are not
# part of every Linux (Abseil, gRPC, protobuf, fmt, oneDNN, ...), and
# run.sh, the command to run there. cuBLAS/cuBLASLt are not carried (over
# 500 MB): run.sh finds those of the machine's PyTorch (nvidia-cublas
# wheels). docs/gpu.md says how to use it with the device machine.
#
#   scripts/gpu_run.sh [OUT_DIR]
#   # there:  bash OUT_DIR/run.sh            (the GPU tests)
#   #         bash OUT_DIR/run.sh runnel run FILE.rnl
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu}
build=${BUILD:-build-gpu}

[[ -x /usr/local/cuda/bin/nvcc ]] || { echo "gpu_run: no nvcc at /usr/local/cuda" >&2; exit 1; }
if [[ $out == .gpu ]] && ! grep -qx '/.gpu/' .git/info/exclude 2>/dev/null; then
  # In a worktree .git is a file; the exclude file is the main one's.
  exclude=$(git rev-parse --git-path info/exclude)
  grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
fi

# Not -march=native: the GPU machine's processor may lack this one's
# instructions.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRUNNEL_CUDA=ON \
  -DRUNNEL_NATIVE=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target runnel gpu_tests

rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/interpreter/runnel" "$build/gpu_tests" "$out/"
strip "$out/runnel" "$out/gpu_tests"
# Every library they load except the C library's own and the CUDA ones the
# machine has (the driver's libcuda; cuBLAS from its PyTorch).
ldd "$out/runnel" "$out/gpu_tests" | awk '/=> \//{print $1, $3}' | sort -u |
  while read -r name path; do
    case $name in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|\
      libcuda.so*|libcublas*.so*) continue ;;
    esac
    cp -L "$path" "$out/lib/$name"
  done

cat >"$out/run.sh" <<'EOF'
#!/usr/bin/env bash
# On the GPU machine: the GPU tests; or, with arguments, that command with
# the carried libraries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
blas=$(python3 - <<'PY'
import glob, site
for d in site.getsitepackages():
    hits = glob.glob(d + "/nvidia/**/libcublasLt.so.13*", recursive=True)
    if hits:
        import os; print(os.path.dirname(hits[0])); break
PY
)
[[ -n $blas ]] || blas=$(dirname "$(find / -name 'libcublasLt.so.13*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$here/lib:$blas:${LD_LIBRARY_PATH:-}
export PATH=$here:$PATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if (($#)); then exec "$@"; fi
exec "$here/gpu_tests" --gtest_brief=1
EOF
chmod +x "$out/run.sh"
du -sh "$out" "$out/lib"
echo "gpu_run: $out is ready; run it there with: bash $out/run.sh"
