#!/usr/bin/env bash
# Packs parplan-run, and what it needs that a bare GPU machine lacks, into one
# folder that travels to a machine with no network and no Debian packages
# (the device machine of docs/cuda.md): the executor, its shared libraries
# (Protobuf, Open MPI with its components and PMIx), and env.sh, which sets
# the paths on that machine. CUDA's own libraries (cudart, cuBLAS, cuBLASLt,
# NCCL, cuDNN) do not travel: env.sh finds them where that machine has them,
# under CUDA's prefix or in PyTorch's nvidia-* packages.
#
#   scripts/device-bundle.sh [DIR]     (default .device, ignored by git)
#
# There: `source DIR/env.sh && DIR/bin/parplan-run PLAN --backend cuda`.
# Plans are compiled here (parplan links MLIR, which stays on this machine):
# bench/torch-step.sh --prepare DIR/plans writes them into the bundle.
# Environment: PARPLAN_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.device}
bin=${PARPLAN_BUILD_DIR:-build}/bin
[[ -x $bin/parplan-run ]] || { echo "device-bundle: $bin/parplan-run is missing; run scripts/setup.sh" >&2; exit 1; }
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
syslib=/usr/lib/$multiarch
rm -rf "$out/bin" "$out/lib" "$out/mpi"
mkdir -p "$out/bin" "$out/lib"
cp "$bin/parplan-run" "$out/bin/"

# The libraries of parplan-run, its MPI components and PMIx that are neither
# the C/C++ runtime (newer there) nor CUDA's (found there).
keep() {
  case $(basename "$1") in
  libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | \
    libstdc++.so* | libgcc_s.so* | libz.so*) return 1 ;;
  libcuda.so* | libcudart.so* | libcublas*.so* | libnccl.so* | libcudnn*.so*) return 1 ;;
  esac
}
collect() {
  ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u
}
mpiroot=$syslib/openmpi
pmixroot=$syslib/pmix2
objects=("$out/bin/parplan-run" "$mpiroot"/lib/openmpi3/*.so)
[[ -d $pmixroot ]] && objects+=("$pmixroot"/lib/pmix/*.so)
while read -r lib; do
  keep "$lib" && cp -L "$lib" "$out/lib/"
done < <(collect "${objects[@]}")
for lib in "$syslib"/libmca_common_*.so.[0-9]*; do
  [[ $lib =~ \.so\.[0-9]+$ ]] && cp -L "$lib" "$out/lib/"
done

# Open MPI finds its components and help texts under OPAL_PREFIX laid out as
# its configured prefix (/usr) is; `orted` is what a singleton starts.
mkdir -p "$out/mpi/lib/$multiarch" "$out/mpi/share" "$out/mpi/bin"
cp -a "$mpiroot" "$out/mpi/lib/$multiarch/"
cp -a /usr/share/openmpi "$out/mpi/share/"
[[ -d $pmixroot ]] && cp -a "$pmixroot" "$out/mpi/lib/$multiarch/"
cp /usr/bin/orted "$out/mpi/bin/"

cat >"$out/env.sh" <<EOF
# Sourced on the device machine: the bundle's libraries, Open MPI's and
# PMIx's prefixes, and CUDA's libraries where that machine keeps them.
bundle=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
# A library the loader's cache has needs no path (and a path to a system
# folder would put its other libraries before PyTorch's own).
cuda_dirs=""
for name in libcublasLt.so.13 libcudart.so.13 libnccl.so.2; do
  ldconfig -p | grep -q "^[[:space:]]*\$name " && continue
  dir=\$(find /usr/local/cuda*/ /opt -name "\$name" 2>/dev/null | head -1 | xargs -r dirname)
  [[ -n \$dir && ":\$cuda_dirs:" != *":\$dir:"* ]] && cuda_dirs=\${cuda_dirs:+\$cuda_dirs:}\$dir
done
export LD_LIBRARY_PATH=\$bundle/lib\${cuda_dirs:+:\$cuda_dirs}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export OPAL_PREFIX=\$bundle/mpi
export PMIX_INSTALL_PREFIX=\$bundle/mpi/lib/$multiarch/pmix2
export PATH=\$bundle/bin:\$bundle/mpi/bin:\$PATH
# Root runs there; one rank needs no network transport.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
EOF
echo "device-bundle: $out ($(du -sh "$out" | cut -f1)): bin/parplan-run, $(ls "$out/lib" | wc -l) libraries, Open MPI; source $out/env.sh there"
