#!/usr/bin/env bash
# Builds Runnel with CUDA here (Release, for any x86-64) and packs into
# OUT_DIR/runnel-gpu.tar.xz (OUT_DIR defaults to .gpu/, which git ignores
# through .git/info/exclude) what a GPU machine without our Debian packages
# needs to run it: the `runnel` binary, the GPU test binary, the shared
# libraries they load that are not part of every Linux (Abseil, gRPC,
# protobuf, fmt, oneDNN, the C++ runtime, ...), the standard library
# (stdlib/), the GPU benchmarks (bench/gpu_bench.py and its scripts), the
# examples' accuracy check (tests/gpu/example_accuracy.py and the three
# examples it trains) and run.sh. With DATA=1 it packs Fashion-MNIST too
# (31 MB, from /usr/share/datasets/fashion-mnist or $FASHION), which the
# examples need: the GPU machine has no Debian packages, so the ctests
# examples.gpu.* cannot run there. cuBLASLt and cuDNN are not carried
# (over 500 MB and 1 GB): run.sh finds the machine's own (PyTorch's
# nvidia-cublas and nvidia-cudnn wheels). Packed, it is about 20 MB (51 MB
# with the data), within the device tool's 64 MiB; unpacked, the libraries
# alone are 59 MB (oneDNN 40), which would not fit beside the repository.
# docs/gpu.md says how to use it.
#
#   [DATA=1] scripts/gpu_run.sh [OUT_DIR]
#   # there:  tar -xJf .gpu/runnel-gpu.tar.xz -C /tmp &&
#   #         bash /tmp/runnel-gpu/run.sh                   (the GPU tests)
#   #         bash /tmp/runnel-gpu/run.sh runnel run FILE.rnl
#   #         bash /tmp/runnel-gpu/run.sh bench          (bench/gpu_bench.py)
#   #         bash /tmp/runnel-gpu/run.sh examples       (needs DATA=1)
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
# runnel_cluster.so: the cluster layer, which `runnel` loads from beside
# itself (cli/load_cluster.h).
cp "$build/runnel" "$build/runnel_cluster.so" "$build/gpu_tests" "$pack/"
strip "$pack/runnel" "$pack/runnel_cluster.so" "$pack/gpu_tests"
# Every library they load except the C library's own and the CUDA ones the
# machine has (the driver's libcuda; cuBLASLt and cuDNN from its PyTorch),
# and oneDNN with its own, which they load at first use
# (kernels/cpu/onednn_loader.cc).
dnnl=$(/sbin/ldconfig -p | awk '$1 == "libdnnl.so.2" { print $NF; exit }')
cp -L "$dnnl" "$pack/lib/libdnnl.so.2"
ldd "$pack/runnel" "$pack/runnel_cluster.so" "$pack/gpu_tests" "$dnnl" |
  awk '/=> \//{print $1, $3}' | sort -u |
  while read -r name path; do
    case $name in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|\
      libcuda.so*|libcublas*.so*|libcudnn*.so*) continue ;;
    esac
    cp -L "$path" "$pack/lib/$name"
  done
# The modules scripts import (RUNNEL_STDLIB_PATH in run.sh), and the GPU
# benchmarks with the scripts they run.
cp -r stdlib "$pack/stdlib"
mkdir -p "$pack/bench"
cp bench/gpu_bench.py bench/train_mlp.rnl bench/train_cnn.rnl \
  bench/train_rows.rnl bench/alexnet.rnl bench/c3d.rnl bench/gpu_copy.rnl \
  bench/loop_swap.rnl \
  "$pack/bench/"
# The examples.gpu.* checks (interpreter/CMakeLists.txt), and their data.
mkdir -p "$pack/examples"
cp tests/gpu/example_accuracy.py examples/fashion_mlp.rnl \
  examples/fashion_cnn.rnl examples/fashion_rows.rnl "$pack/examples/"
if [[ ${DATA:-0} == 1 ]]; then
  fashion=${FASHION:-/usr/share/datasets/fashion-mnist}
  [[ -f $fashion/train-images-idx3-ubyte.gz ]] ||
    { echo "gpu_run: no Fashion-MNIST in $fashion (set FASHION)" >&2; exit 1; }
  mkdir -p "$pack/data"
  cp "$fashion"/*-ubyte.gz "$pack/data/"
fi

cat >"$pack/run.sh" <<'EOF'
#!/usr/bin/env bash
# On the GPU machine: the GPU tests; or, with arguments, that command with
# the carried libraries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# cuBLASLt (libcublasLt.so.13) and cuDNN (libcudnn.so.9, which loads its
# libcudnn_*.so.9 from its own folder): the PyTorch wheels' (nvidia-cublas,
# nvidia-cudnn), else CUDA's or the system's. Without cuDNN,
# convolutions on the GPU fail saying so; everything else runs.
libs=$(python3 - <<'PY'
import glob, os, site
wheels = [d + "/nvidia/**/" for d in site.getsitepackages()]
system = ["/usr/local/cuda/lib64/", "/usr/lib/x86_64-linux-gnu/",
          "/usr/local/lib/"]
dirs = []
for name in ("libcublasLt.so.13", "libcudnn.so.9"):
    for root in wheels + system:
        hits = glob.glob(root + name, recursive=True)
        if hits:
            d = os.path.dirname(hits[0])
            dirs += [] if d in dirs else [d]
            break
    else:
        print("run.sh: no " + name + " found", file=__import__("sys").stderr)
print(":".join(dirs))
PY
)
# The carried libraries come first for Runnel only: the benchmark's
# PyTorch runs with the machine's own (ours are Debian's, older).
export GPU_BENCH_PEER_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$here/lib:$libs:${LD_LIBRARY_PATH:-}
export RUNNEL_STDLIB_PATH=${RUNNEL_STDLIB_PATH:-$here/stdlib}
export PATH=$here:$PATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [[ ${1:-} == bench ]]; then
  shift
  exec python3 "$here/bench/gpu_bench.py" "$here" "$@"
fi
if [[ ${1:-} == examples ]]; then
  # examples.gpu.fashion_{mlp,cnn,rows}_short, with the same arguments
  # (interpreter/CMakeLists.txt) and the carried data.
  [[ -d $here/data ]] ||
    { echo "run.sh: no data/: pack with DATA=1 scripts/gpu_run.sh" >&2; exit 1; }
  status=0
  for ex in "fashion_mlp matmul 400 0.75" "fashion_cnn conv2d 150 0.75" \
    "fashion_rows lstm_sequence,lstm_sequence_grad 150 0.65"; do
    read -r name op steps expect <<<"$ex"
    echo "== examples.gpu.${name}_short"
    python3 "$here/examples/example_accuracy.py" "$here/runnel" \
      "$here/examples/$name.rnl" "$op" -- --arg epochs=1 --arg steps="$steps" \
      --arg expect="$expect" --arg data="$here/data/" || status=1
  done
  exit $status
fi
if (($#)); then exec "$@"; fi
exec "$here/gpu_tests" --gtest_brief=1
EOF
chmod +x "$pack/run.sh"
tar -C "$build" -cJf "$out/runnel-gpu.tar.xz" runnel-gpu
du -sh "$pack" "$out/runnel-gpu.tar.xz"
echo "gpu_run: carry $out; run there:"
echo "  tar -xJf $out/runnel-gpu.tar.xz -C /tmp && bash /tmp/runnel-gpu/run.sh"
echo "  tar -xJf $out/runnel-gpu.tar.xz -C /tmp && bash /tmp/runnel-gpu/run.sh bench"
