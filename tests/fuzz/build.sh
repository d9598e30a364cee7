#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build.sh - builds the gpufl fuzz targets with clang + libFuzzer (ASan, UBSan)
# and runs a local campaign: each target fuzzes a copy of its corpus, then the
# inputs that add coverage are merged back into tests/fuzz/corpus/<target>.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

seconds=60
build_dir="$root/build-fuzz"
targets=()
build_only=0
merge=1
fork=0
suppressions=""
cc=${CC:-clang}

usage() {
    cat <<EOF
usage: tests/fuzz/build.sh [options]

Builds fuzz_config, fuzz_reader, fuzz_sass, fuzz_feed, fuzz_cgroup, fuzz_upload, fuzz_trigger, fuzz_ingest_body and
fuzz_ingest_headers (gpufl-server's parsers, with its sources under cmd/gpufl-server) with $cc -fsanitize=fuzzer,address,undefined
(the library sources are compiled in, with coverage), runs each target for
SECONDS on a copy of tests/fuzz/corpus/<target> in a temporary directory, then
merges the new inputs that add coverage into the committed corpus (-merge=1).
Crashes are saved under BUILD_DIR/artifacts/<target>/; the script then exits 1.

options:
  -t, --time SECONDS     fuzzing time per target (default $seconds)
  -T, --target NAME      config, reader, sass, feed, cgroup, upload, trigger, ingest_body or ingest_headers;
                         repeat for several (default: all)
  -b, --build-dir DIR    where binaries, logs and crashes go (default build-fuzz/)
  -j, --fork N           run N fuzzing processes per target (libFuzzer -fork=N)
  -s, --suppressions F   UBSan suppressions file, to fuzz past a known, reported bug
      --build-only       build, do not fuzz
      --no-merge         leave the committed corpus untouched
  -h, --help             this help

environment: CC (default clang), CFLAGS (added to the compile flags).
EOF
}

die() {
    echo "build.sh: $*" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case "$1" in
    -t | --time) seconds=${2:?--time needs a value}; shift 2 ;;
    -T | --target) targets+=("${2:?--target needs a value}"); shift 2 ;;
    -b | --build-dir) build_dir=${2:?--build-dir needs a value}; shift 2 ;;
    -j | --fork) fork=${2:?--fork needs a value}; shift 2 ;;
    -s | --suppressions) suppressions=${2:?--suppressions needs a value}; shift 2 ;;
    --build-only) build_only=1; shift ;;
    --no-merge) merge=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(config reader sass feed cgroup upload trigger ingest_body ingest_headers)
for t in "${targets[@]}"; do
    case "$t" in config | reader | sass | feed | cgroup | upload | trigger | ingest_body | ingest_headers) ;;
    *) die "unknown target '$t' (config, reader, sass, feed, cgroup, upload, trigger, ingest_body or ingest_headers)" ;; esac
done
case "$seconds" in '' | *[!0-9]*) die "--time wants whole seconds" ;; esac
case "$fork" in '' | *[!0-9]*) die "--fork wants a number" ;; esac
if [ -n "$suppressions" ]; then
    [ -f "$suppressions" ] || die "no suppressions file '$suppressions'"
    suppressions=$(cd "$(dirname "$suppressions")" && pwd)/$(basename "$suppressions")
fi
command -v "$cc" >/dev/null || die "$cc not found (set CC)"
pkg-config --exists jansson || die "jansson not found by pkg-config (libjansson-dev)"

# ---- build ----------------------------------------------------------------

mkdir -p "$build_dir/obj"
read -r -a jansson_cflags <<<"$(pkg-config --cflags jansson)"
read -r -a jansson_libs <<<"$(pkg-config --libs jansson)"
read -r -a extra_cflags <<<"${CFLAGS:-}"
common=(-g -O1 -fno-omit-frame-pointer -std=c11 -D_GNU_SOURCE -I "$root/include" -I "$root/lib"
    "${jansson_cflags[@]}" "${extra_cflags[@]}")
# UBSan stays recoverable at compile time so that a suppressions file can
# skip a known bug; UBSAN_OPTIONS below makes every report fatal.
sanitize=("-fsanitize=address,undefined")

# The libraries' own source lists, so the targets run the code CMake builds:
# the shared helpers, libgpufl's list and libgpufl-analysis's with the parts
# appended to it, not the CUDA-only sources appended inside if().
mapfile -t sources < <(sed -n -e '/set(GPUFL_UTIL_SOURCES/,/)/p' -e '/set(GPUFL_SOURCES/,/)/p' \
    -e '/set(GPUFL_ANALYSIS_SOURCES/,/)/p' \
    -e '/^list(APPEND GPUFL_ANALYSIS_SOURCES/,/)/p' -e '/^list(APPEND GPUFL_SOURCES/,/)/p' \
    "$root/lib/CMakeLists.txt" |
    grep -o '[A-Za-z0-9_./-]*\.c')
[ ${#sources[@]} -gt 0 ] || die "found no GPUFL_SOURCES in lib/CMakeLists.txt"

echo "build.sh: compiling ${#sources[@]} library sources with $cc"
objects=()
for src in "${sources[@]}"; do
    obj="$build_dir/obj/${src//\//_}.o"
    "$cc" "${common[@]}" "${sanitize[@]}" -fsanitize=fuzzer-no-link -DGPUFL_BUILDING_LIBRARY \
        -c "$root/lib/$src" -o "$obj"
    objects+=("$obj")
done
rm -f "$build_dir/libgpufl-fuzz.a"
ar rcs "$build_dir/libgpufl-fuzz.a" "${objects[@]}"

# gpufl-server's parsers and the store library they name (its typed tables), as CMake lists them.
server_dir="$root/cmd/gpufl-server"
server_sources=(ingest_parse.c ingest_rows.c store.c store_tables.c store_sqlite.c)
read -r -a server_libs <<<"$(pkg-config --libs sqlite3 libsodium zlib)"
for t in "${targets[@]}"; do
    echo "build.sh: linking fuzz_$t"
    extra=()
    case "$t" in
    ingest_*)
        for src in "${server_sources[@]}"; do
            obj="$build_dir/obj/server_${src%.c}.o"
            "$cc" "${common[@]}" "${sanitize[@]}" -fsanitize=fuzzer-no-link -I "$server_dir" \
                -c "$server_dir/$src" -o "$obj"
            extra+=("$obj")
        done
        extra+=(-I "$server_dir" "${server_libs[@]}") ;;
    esac
    "$cc" "${common[@]}" -fsanitize=fuzzer,address,undefined "$here/fuzz_$t.c" "${extra[@]}" \
        "$build_dir/libgpufl-fuzz.a" "${jansson_libs[@]}" "${server_libs[@]}" -lpthread -ldl -lm \
        -o "$build_dir/fuzz_$t"
done
[ "$build_only" -eq 0 ] || exit 0

# ---- fuzz -------------------------------------------------------------------

work=$(mktemp -d "${TMPDIR:-/tmp}/gpufl-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
ubsan="halt_on_error=1:print_stacktrace=1"
[ -z "$suppressions" ] || ubsan="$ubsan:suppressions=$suppressions"

max_len() {
    case "$1" in config | ingest_headers) echo 8192 ;; cgroup) echo 16384 ;;
    reader | feed | ingest_body) echo 65536 ;; upload) echo 16384 ;; trigger) echo 1024 ;; esac
}

dict_of() {
    case "$1" in feed | ingest_body | upload) echo reader ;; ingest_headers) echo ingest_headers ;; *) echo "$1" ;; esac
}

failed=()
summary=()
for t in "${targets[@]}"; do
    bin="$build_dir/fuzz_$t"
    corpus="$here/corpus/$t"
    artifacts="$build_dir/artifacts/$t"
    log="$build_dir/fuzz_$t.log"
    mkdir -p "$work/$t" "$artifacts" "$corpus"
    cp -R "$corpus/." "$work/$t/"
    args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$t")"
        -dict="$here/$(dict_of "$t").dict" -artifact_prefix="$artifacts/" -print_final_stats=1)
    [ "$fork" -eq 0 ] || args+=(-fork="$fork" -ignore_crashes=0)
    echo "build.sh: fuzzing $t for ${seconds}s (log: $log)"
    status=0
    (cd "$work" && TMPDIR="$work" UBSAN_OPTIONS="$ubsan" "$bin" "${args[@]}" "$work/$t") \
        >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    done_line=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$log" | tail -n 1 || true)
    summary+=("$t: exit $status, ${execs:-?} exec/s, last status: ${done_line:-none}")
    if [ "$status" -ne 0 ]; then
        failed+=("$t")
        grep -E 'ERROR: |runtime error|Test unit written to' "$log" | head -n 5 >&2 || true
    fi
    if [ "$merge" -eq 1 ]; then
        before=$(find "$corpus" -type f | wc -l)
        # Edges only (no hit counters): an input joins the committed corpus
        # when it reaches code the corpus does not, which keeps it small.
        (cd "$work" && TMPDIR="$work" UBSAN_OPTIONS="$ubsan" "$bin" -merge=1 -use_counters=0 \
            -max_len="$(max_len "$t")" "$corpus" "$work/$t") >"$build_dir/merge_$t.log" 2>&1 ||
            echo "build.sh: merge of $t failed, see $build_dir/merge_$t.log" >&2
        after=$(find "$corpus" -type f | wc -l)
        summary+=("$t: corpus $before -> $after files, $(du -sb "$corpus" | cut -f1) bytes")
    fi
done

printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "build.sh: crashes in: ${failed[*]}; inputs under $build_dir/artifacts/" >&2
    exit 1
fi
