#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_api_test.sh - installs a built gpufl into a temporary prefix and uses it as a customer would:
# CMake find_package and plain pkg-config builds (shared and static) of a program that records
# (libgpufl alone) and one that also reads (libgpufl-analysis), every program run with gpufl on
# and with GPUFL_DISABLED=1, the exported symbols of both libraries, the headers under
# -pedantic, and the report of an application linked to libgpufl alone with and without
# libgpufl-analysis installed.
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
analysis_so=$(find "$prefix" -name libgpufl-analysis.so -print -quit)
if [[ -z $pcfile || -z $solib || -z $analysis_so || ! -f $prefix/include/gpufl/gpufl.h ||
      ! -f $prefix/include/gpufl/gpufl_analysis.h ]]; then
    fail "the install lacks gpufl.pc, libgpufl.so, libgpufl-analysis.so, gpufl.h or gpufl_analysis.h"
    exit 1
fi
[[ -f $(dirname "$pcfile")/gpufl-analysis.pc ]] || fail "the install lacks gpufl-analysis.pc"
for a in libgpufl.a libgpufl-analysis.a; do
    [[ -f $(dirname "$solib")/$a ]] || fail "the install lacks $a"
done
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$solib")
echo "libdir $libdir, pkg-config dir $pcdir"

# ---------------------------------------------------------------- symbols
# exported_symbols <lib>: the defined dynamic symbols; fails on any beyond the gpufl_* API.
exported_symbols() {
    local lib=$1 s bad=()
    mapfile -t symbols < <(nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }')
    for s in "${symbols[@]}"; do
        case $s in
            gpufl__*) bad+=("$s") ;;
            gpufl_*) ;;
            # NVTX's injection entry point, the name NVTX looks up (docs/nvtx.md).
            InitializeInjectionNvtx2) ;;
            # ASan's own marker for an instrumented global; not a symbol of the library's API.
            __odr_asan[._]gpufl_* | __odr_asan_gen_gpufl_*) [[ -n $san ]] || bad+=("$s") ;;
            *) bad+=("$s") ;;
        esac
    done
    if [[ ${#symbols[@]} -eq 0 ]]; then
        fail "nm -D found no defined symbols in $lib"
    elif [[ ${#bad[@]} -ne 0 ]]; then
        fail "$(basename "$lib") exports symbols beyond the gpufl_* API: ${bad[*]}"
    fi
}
exports() { printf '%s\n' "${symbols[@]}" | grep -qx "$1"; }

step "exported symbols of $(basename "$solib")"
exported_symbols "$solib"
for want in gpufl_init gpufl_shutdown gpufl_scope_begin gpufl_scope_end gpufl_report_write \
    gpufl_report_session gpufl_probe_create gpufl_last_error gpufl_nvtx_inject \
    InitializeInjectionNvtx2; do
    exports "$want" || fail "libgpufl.so does not export $want"
done
# The recording library carries no analysis: what applications load stays small.
for unwanted in gpufl_analysis_open gpufl_analysis_report gpufl_session_list_create \
    gpufl_analysis_export; do
    exports "$unwanted" && fail "libgpufl.so exports $unwanted: the analysis belongs to libgpufl-analysis"
done

step "exported symbols of $(basename "$analysis_so")"
exported_symbols "$analysis_so"
for want in gpufl_analysis_open gpufl_analysis_open_with gpufl_analysis_column \
    gpufl_analysis_report gpufl_analysis_report_write gpufl_analysis_insights_write \
    gpufl_analysis_export gpufl_session_list_create gpufl_report_format_parse; do
    exports "$want" || fail "libgpufl-analysis.so does not export $want"
done
# One gpufl_last_error() and one session state per process: those stay libgpufl's.
for unwanted in gpufl_init gpufl_last_error gpufl_scope_begin; do
    exports "$unwanted" && fail "libgpufl-analysis.so exports $unwanted, which is libgpufl's"
done
readelf -d "$analysis_so" | grep -q 'NEEDED.*\[libgpufl\.so\.' ||
    fail "libgpufl-analysis.so does not name libgpufl.so as a dependency"

# Vendor libraries are opened at run time, never linked: a machine without
# the NVIDIA driver must still load libgpufl; and libgpufl loads the analysis
# only when a report is asked for.
needed=$(readelf -d "$solib" | awk '/NEEDED/ { print $NF }' | tr -d '[]')
if grep -qiE 'nvidia|cuda|cupti' <<<"$needed"; then
    fail "libgpufl.so links a vendor library: $(tr '\n' ' ' <<<"$needed")"
fi
if grep -q 'gpufl-analysis' <<<"$needed"; then
    fail "libgpufl.so links libgpufl-analysis"
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
    cp "$tmp/consumer/c_program_shared" "$tmp/bin/cmake_c_shared"
    bins+=(cmake_spec_shared:shared cmake_c_static:static cmake_c_shared:shared)
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
read -r -a pc_cflags <<<"$("${pc[@]}" --cflags gpufl-analysis)"
echo "cflags: ${pc_cflags[*]}"
for m in gpufl gpufl-analysis; do
    echo "$m libs: $("${pc[@]}" --libs $m); static: $("${pc[@]}" --static --libs $m)"
done

build_pc() { # name linkage(shared|static) language(c|c++) module(gpufl|gpufl-analysis) source
    local name=$1 linkage=$2 lang=$3 module=$4 source=$5 cc flags libs=() w
    if [[ $lang == c ]]; then
        cc=gcc
        flags=(-std=c11 -pedantic -Wall -Wextra -Werror)
    else
        cc=g++
        flags=(-std=c++17 -pedantic -Wall -Wextra -Werror)
    fi
    if [[ $linkage == static ]]; then
        # The .so and the .a of each library sit in libdir; ask for the archives by name.
        for w in $("${pc[@]}" --static --libs "$module"); do
            case $w in
                -lgpufl | -lgpufl-analysis) libs+=("-l:lib${w#-l}.a") ;;
                *) libs+=("$w") ;;
            esac
        done
    else
        read -r -a libs <<<"$("${pc[@]}" --libs "$module")"
    fi
    if "$cc" "${flags[@]}" "${san_flags[@]}" "${pc_cflags[@]}" "$source" -o "$tmp/bin/$name" \
        "${libs[@]}" "${san_flags[@]}"; then
        bins+=("$name:$linkage")
    else
        fail "$name: $cc with pkg-config $module flags does not build $source"
    fi
}
# The C++ program records only (libgpufl); the C program also reads (libgpufl-analysis).
build_pc pc_spec_shared shared c++ gpufl "$api/spec_program.cpp"
build_pc pc_c_shared shared c gpufl-analysis "$api/c_program.c"
build_pc pc_spec_static static c++ gpufl "$api/spec_program.cpp"
build_pc pc_c_static static c gpufl-analysis "$api/c_program.c"

# ---------------------------------------------------------------- run
step "running every program, gpufl on and GPUFL_DISABLED=1"
run_env=(env -u GPUFL_DISABLED -u GPUFL_CONFIG_FILE -u GPUFL_PROFILING_ENGINE -u GPUFL_BACKEND_URL
    -u GPUFL_API_KEY -u GPUFL_API_PATH -u GPUFL_REMOTE_UPLOAD -u GPUFL_BACKEND -u GPUFL_ANALYSIS_LIBRARY
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

# ---------------------------------------------------------------- report without the analysis
# An application linked to libgpufl alone: its report loads libgpufl-analysis from beside
# libgpufl; in an install without it, the call fails with GPUFL_ENOTSUP and says what is missing.
step "gpufl_report_write with and without libgpufl-analysis"
bare=$tmp/bare-lib
mkdir -p "$bare"
cp -P "$libdir"/libgpufl.so* "$bare"/
build_pc report_program shared c gpufl "$api/report_program.c"
if [[ -x $tmp/bin/report_program ]]; then
    readelf -d "$tmp/bin/report_program" | grep -q 'gpufl-analysis' &&
        fail "report_program links libgpufl-analysis; it should link libgpufl alone"
    for expect in present absent; do
        dir=$libdir
        [[ $expect == absent ]] && dir=$bare
        work=$tmp/run/report-$expect
        mkdir -p "$work"
        if env -u GPUFL_DISABLED -u GPUFL_CONFIG_FILE -u GPUFL_PROFILING_ENGINE -u GPUFL_BACKEND \
            -u GPUFL_ANALYSIS_LIBRARY "LD_LIBRARY_PATH=$dir" timeout 60 \
            "$tmp/bin/report_program" --expect $expect --dir "$work" >"$work.out" 2>&1; then
            echo "ok: report_program --expect $expect"
        else
            cat "$work.out" >&2
            fail "report_program --expect $expect"
        fi
    done
fi

if [[ $failures -ne 0 ]]; then
    echo "api_installed: $failures failure(s)" >&2
    exit 1
fi
echo "api_installed: all checks passed"
