#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_api_test.sh - installs a built gpufl into a temporary prefix and uses it as a customer would:
# CMake find_package and plain pkg-config builds (shared and static), every program run with gpufl
# on and with GPUFL_DISABLED=1, the exported symbols and the headers under -pedantic.
#
# Usage: run_api_test.sh <source dir> <build dir>. Exits non-zero after listing every failure.
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 <source dir> <build dir>" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
api=$src/tests/api

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
step() { echo "== $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpufl-api.XXXXXX")
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
prefix=$tmp/prefix

# An instrumented library needs instrumented programs: take the build's sanitizers.
san=$(sed -n 's/^GPUFL_SANITIZE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
san_flags=()
if [[ -n $san ]]; then
    san_flags=("-fsanitize=${san//;/,}" -fno-omit-frame-pointer)
fi

step "cmake --install $build --prefix $prefix"
if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    echo "FAIL: cmake --install failed" >&2
    exit 1
fi

pcfile=$(find "$prefix" -name gpufl.pc -print -quit)
solib=$(find "$prefix" -name libgpufl.so -print -quit)
if [[ -z $pcfile || -z $solib || ! -f $prefix/include/gpufl/gpufl.h ]]; then
    fail "the install lacks gpufl.pc, libgpufl.so or include/gpufl/gpufl.h"
    exit 1
fi
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$solib")
echo "libdir $libdir, pkg-config dir $pcdir"

# ---------------------------------------------------------------- symbols
step "exported symbols of $(basename "$solib")"
mapfile -t symbols < <(nm -D --defined-only "$solib" | awk 'NF == 3 { print $3 }')
bad=()
for s in "${symbols[@]}"; do
    case $s in
        gpufl__*) bad+=("$s") ;;
        gpufl_*) ;;
        # ASan's own marker for an instrumented global; not a symbol of the library's API.
        __odr_asan[._]gpufl_* | __odr_asan_gen_gpufl_*) [[ -n $san ]] || bad+=("$s") ;;
        *) bad+=("$s") ;;
    esac
done
if [[ ${#symbols[@]} -eq 0 ]]; then
    fail "nm -D found no defined symbols in $solib"
elif [[ ${#bad[@]} -ne 0 ]]; then
    fail "libgpufl.so exports symbols beyond the gpufl_* API: ${bad[*]}"
fi
for want in gpufl_init gpufl_shutdown gpufl_scope_begin gpufl_scope_end gpufl_report_write \
    gpufl_analysis_open gpufl_analysis_column gpufl_analysis_report; do
    printf '%s\n' "${symbols[@]}" | grep -qx "$want" || fail "libgpufl.so does not export $want"
done

# Vendor libraries are opened at run time, never linked: a machine without
# the NVIDIA driver must still load libgpufl.
needed=$(readelf -d "$solib" | awk '/NEEDED/ { print $NF }' | tr -d '[]')
if grep -qiE 'nvidia|cuda|cupti' <<<"$needed"; then
    fail "libgpufl.so links a vendor library: $(tr '\n' ' ' <<<"$needed")"
fi

# ---------------------------------------------------------------- headers
step "headers under -pedantic"
inc=(-I"$prefix/include")
printf '#include <gpufl/gpufl.h>\nint main(void) { return gpufl_is_active(); }\n' >"$tmp/h.c"
printf '#include <gpufl/gpufl.hpp>\nint main() { return gpufl::init(gpufl::InitOptions{}); }\n' \
    >"$tmp/h.cpp"
printf '#include <gpufl/gpufl.h>\nint main() { return gpufl_is_active(); }\n' >"$tmp/h2.cpp"
gcc -std=c11 -pedantic -Wall -Wextra -Werror "${inc[@]}" -fsyntax-only "$tmp/h.c" ||
    fail "gpufl.h does not compile as C11 -pedantic -Werror"
g++ -std=c++17 -pedantic -Wall -Wextra -Werror "${inc[@]}" -fsyntax-only "$tmp/h.cpp" ||
    fail "gpufl.hpp does not compile as C++17 -pedantic -Werror"
g++ -std=c++17 -pedantic -Wall -Wextra -Werror "${inc[@]}" -fsyntax-only "$tmp/h2.cpp" ||
    fail "gpufl.h does not compile as C++17 -pedantic -Werror"
printf '#include <gpufl/gpufl_analysis.h>\nint main(void) { gpufl_analysis_close(0); return 0; }\n' \
    >"$tmp/a.c"
cp "$tmp/a.c" "$tmp/a.cpp"
gcc -std=c11 -pedantic -Wall -Wextra -Werror "${inc[@]}" -fsyntax-only "$tmp/a.c" ||
    fail "gpufl_analysis.h does not compile as C11 -pedantic -Werror"
g++ -std=c++17 -pedantic -Wall -Wextra -Werror "${inc[@]}" -fsyntax-only "$tmp/a.cpp" ||
    fail "gpufl_analysis.h does not compile as C++17 -pedantic -Werror"

bins=() # "name:linkage" pairs to run; the binary is $tmp/bin/name

# ---------------------------------------------------------------- CMake package
step "consumer project with find_package(gpufl)"
mkdir -p "$tmp/bin"
if cmake -S "$api/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="${san_flags[*]}" \
    -DCMAKE_CXX_FLAGS="${san_flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${san_flags[*]}" \
    >"$tmp/consumer.log" 2>&1 &&
    cmake --build "$tmp/consumer" -j2 >>"$tmp/consumer.log" 2>&1; then
    cp "$tmp/consumer/spec_program" "$tmp/bin/cmake_spec_shared"
    cp "$tmp/consumer/c_program" "$tmp/bin/cmake_c_static"
    bins+=(cmake_spec_shared:shared cmake_c_static:static)
else
    cat "$tmp/consumer.log" >&2
    fail "the find_package(gpufl) consumer project does not configure or build"
fi

# ---------------------------------------------------------------- pkg-config
step "plain g++/gcc with pkg-config"
export PKG_CONFIG_PATH=$pcdir
pc=(pkg-config)
pc_prefix=$(pkg-config --variable=prefix gpufl || true)
pc_include=$(pkg-config --variable=includedir gpufl || true)
# The file may name its prefix relative to itself; what counts is where it leads.
if [[ $(realpath -m "$pc_prefix") != "$(realpath -m "$prefix")" ||
      $(realpath -m "$pc_include") != "$(realpath -m "$prefix/include")" ]]; then
    fail "gpufl.pc is not relocatable: installed with --prefix $prefix it says" \
        "prefix=$pc_prefix includedir=$pc_include (the configure-time CMAKE_INSTALL_PREFIX);" \
        "continuing with pkg-config --define-prefix"
    pc=(pkg-config --define-prefix)
fi
read -r -a pc_cflags <<<"$("${pc[@]}" --cflags gpufl)"
read -r -a pc_libs <<<"$("${pc[@]}" --libs gpufl)"
read -r -a pc_static <<<"$("${pc[@]}" --static --libs gpufl)"
echo "cflags: ${pc_cflags[*]}"
echo "libs: ${pc_libs[*]}"
echo "static libs: ${pc_static[*]}"
# Both libgpufl.so and libgpufl.a sit in libdir; ask for the archive by name.
static_libs=()
for w in "${pc_static[@]}"; do
    if [[ $w == -lgpufl ]]; then static_libs+=(-l:libgpufl.a); else static_libs+=("$w"); fi
done

build_pc() { # name linkage(shared|static) language(c|c++) source
    local name=$1 linkage=$2 lang=$3 source=$4 cc flags libs
    if [[ $lang == c ]]; then
        cc=gcc
        flags=(-std=c11 -pedantic -Wall -Wextra -Werror)
    else
        cc=g++
        flags=(-std=c++17 -pedantic -Wall -Wextra -Werror)
    fi
    if [[ $linkage == static ]]; then libs=("${static_libs[@]}"); else libs=("${pc_libs[@]}"); fi
    if "$cc" "${flags[@]}" "${san_flags[@]}" "${pc_cflags[@]}" "$source" -o "$tmp/bin/$name" \
        "${libs[@]}" "${san_flags[@]}"; then
        bins+=("$name:$linkage")
    else
        fail "$name: $cc with pkg-config flags does not build $source"
    fi
}
build_pc pc_spec_shared shared c++ "$api/spec_program.cpp"
build_pc pc_c_shared shared c "$api/c_program.c"
build_pc pc_spec_static static c++ "$api/spec_program.cpp"
build_pc pc_c_static static c "$api/c_program.c"

# ---------------------------------------------------------------- run
step "running every program, gpufl on and GPUFL_DISABLED=1"
run_env=(env -u GPUFL_DISABLED -u GPUFL_CONFIG_FILE -u GPUFL_PROFILING_ENGINE -u GPUFL_BACKEND_URL
    -u GPUFL_API_KEY -u GPUFL_API_PATH -u GPUFL_REMOTE_UPLOAD -u GPUFL_BACKEND
    "LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
for entry in "${bins[@]}"; do
    name=${entry%%:*}
    linkage=${entry#*:}
    bin=$tmp/bin/$name
    needed=$(readelf -d "$bin" | grep NEEDED || true)
    if [[ $linkage == shared && $needed != *libgpufl.so* ]]; then
        fail "$name should load libgpufl.so but does not"
    elif [[ $linkage == static && $needed == *libgpufl.so* ]]; then
        fail "$name should be linked to libgpufl.a but loads libgpufl.so"
    fi
    for mode in enabled disabled; do
        work=$tmp/run/$name-$mode
        mkdir -p "$work"
        extra=()
        [[ $mode == disabled ]] && extra=(GPUFL_DISABLED=1)
        if (cd "$work" && "${run_env[@]}" "${extra[@]}" timeout 60 "$bin" --mode "$mode" \
            --dir "$work") >"$work.out" 2>&1; then
            echo "ok: $name --mode $mode"
        else
            cat "$work.out" >&2
            fail "$name --mode $mode exited non-zero"
        fi
        if [[ $mode == disabled ]]; then
            stray=$(find "$work" -name '*.log' | head -n 3)
            [[ -z $stray ]] || fail "$name --mode disabled wrote log files: $stray"
        fi
    done
done

if [[ $failures -ne 0 ]]; then
    echo "api_installed: $failures failure(s)" >&2
    exit 1
fi
echo "api_installed: all checks passed"
