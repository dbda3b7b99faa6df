#!/usr/bin/env bash
# Builds Runnel with CUDA here (Release, for any x86-64) and packs into
# OUT_DIR/runnel-gpu.tar.xz (OUT_DIR defaults to .gpu/, which git ignores
# through .git/info/exclude) what a GPU machine without our Debian packages
# needs to run it: the `runnel` binary, the GPU test binary, the shared
# libraries they load that are not part of every Linux (Abseil, gRPC,
# protobuf, fmt, oneDNN, the C++ runtime, ...), and run.sh. cuBLASLt is
# not carried (over 500 MB): run.sh finds the machine's own (PyTorch's
# nvidia-cublas wheel). Packed, it is about 20 MB, within the device tool's
# 64 MiB; unpacked, the libraries alone are 59 MB (oneDNN 40), which would
# not fit beside the repository. docs/gpu.md says how to use it.
#
#   scripts/gpu_run.sh [OUT_DIR]
#   # there:  tar -xJf .gpu/runnel-gpu.tar.xz -C /tmp &&
#   #         bash /tmp/runnel-gpu/run.sh                   (the GPU tests)
#   #         bash /tmp/runnel-gpu/run.sh runnel run FILE.rnl
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

pack=$build/runnel-gpu
rm -rf "$pack"
mkdir -p "$pack/lib" "$out"
cp "$build/runnel" "$build/gpu_tests" "$pack/"
strip "$pack/runnel" "$pack/gpu_tests"
# Every library they load except the C library's own and the CUDA ones the
# machine has (the driver's libcuda; cuBLASLt from its PyTorch).
ldd "$pack/runnel" "$pack/gpu_tests" | awk '/=> \//{print $1, $3}' | sort -u |
  while read -r name path; do
    case $name in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|\
      libcuda.so*|libcublas*.so*) continue ;;
    esac
    cp -L "$path" "$pack/lib/$name"
  done

cat >"$pack/run.sh" <<'EOF'
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
chmod +x "$pack/run.sh"
tar -C "$build" -cJf "$out/runnel-gpu.tar.xz" runnel-gpu
du -sh "$pack" "$out/runnel-gpu.tar.xz"
echo "gpu_run: carry $out; run there:"
echo "  tar -xJf $out/runnel-gpu.tar.xz -C /tmp && bash /tmp/runnel-gpu/run.sh"
