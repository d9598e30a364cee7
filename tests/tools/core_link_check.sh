#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# core_link_check.sh - links the objects of lib/core and lib/util (with lib/net, the upload
# module core calls) alone into a shared library with --no-undefined, against libc, libm,
# libdl, pthreads, jansson and zlib only (libcurl is loaded at run time); the entries of the
# backend and source tables, which core/backends.c alone names (gpufl__backend_*,
# gpufl__source_*), are stubbed. A core object that calls into a vendor or a source module
# (gpufl__nvml_*, gpufl__cupti_*, gpufl__trace_*, gpufl__host_*, cu*, nvml*, ...) leaves an
# undefined reference: the check fails and names it, with the object that made it. So does a
# table entry named outside core/backends.c.
#
# Usage: core_link_check.sh [--self-test] CC --link-flags=FLAGS OBJECT...
#   OBJECT...: the library's objects; those under core/, net/ and util/ are taken.
#   --self-test: also plants an object calling gpufl__nvml_open and cuInit, and succeeds only
#   when the check then fails naming both (and passes without it).
set -euo pipefail

self_test=0
if [[ ${1:-} == --self-test ]]; then
    self_test=1
    shift
fi
if [[ $# -lt 3 ]]; then
    echo "usage: $0 [--self-test] CC --link-flags=FLAGS OBJECT..." >&2
    exit 2
fi
cc=$1
read -r -a link_flags <<<"${2#--link-flags=}"
shift 2

objects=()
tables=
for o in "$@"; do
    case $o in
        */core/backends.c.o)
            tables=$o
            objects+=("$o")
            ;;
        */core/*.o | */net/*.o | */util/*.o) objects+=("$o") ;;
    esac
done
if [[ -z $tables ]]; then
    echo "core_link_check: core/backends.c.o is not among the arguments" >&2
    exit 2
fi
if [[ ${#objects[@]} -lt 5 ]]; then
    echo "core_link_check: only ${#objects[@]} core/util objects among the arguments" >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpufl-core-link.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The table entries backends.c names, stubbed: core walks the tables without knowing an entry.
mapfile -t entries < <(nm -u "$tables" | awk '{ print $NF }' |
    grep -E '^gpufl__(backend|source)_[A-Za-z0-9_]+$' || true)
: >"$tmp/stub.c"
for e in "${entries[@]}"; do echo "const char $e[256] = {0};" >>"$tmp/stub.c"; done
"$cc" -c -fPIC "${link_flags[@]}" -o "$tmp/stub.o" "$tmp/stub.c"

# check OBJECT...: 0 when they link alone; else prints the references and returns 1.
check() {
    local o e bad=0
    for o in "$@"; do
        [[ $o == "$tables" ]] && continue
        for e in "${entries[@]}"; do
            if nm -u "$o" | awk '{ print $NF }' | grep -qx "$e"; then
                echo "core_link_check: $o names the table entry $e: only core/backends.c may"
                bad=1
            fi
        done
    done
    [[ $bad == 0 ]] || return 1
    if "$cc" -shared -o "$tmp/core.so" "$@" "$tmp/stub.o" "${link_flags[@]}" -Wl,--no-undefined \
        -ljansson -lz -lpthread -ldl -lm 2>"$tmp/link.log"; then
        return 0
    fi
    echo "core_link_check: lib/core and lib/util do not link alone; what they reference outside:"
    grep -E 'undefined reference|first referenced|In function' "$tmp/link.log" | sed 's/^/  /' ||
        cat "$tmp/link.log"
    local names
    names=$(grep -oE "undefined reference to \`[^']+'" "$tmp/link.log" | sed "s/.*\`//; s/'//" |
        sort -u | tr '\n' ' ')
    echo "core_link_check: undefined: $names"
    return 1
}

if [[ $self_test == 0 ]]; then
    check "${objects[@]}"
    echo "core_link_check: ${#objects[@]} objects of lib/core and lib/util link alone"
    exit 0
fi

# Self-test: the real objects pass, the planted one fails by name.
if ! check "${objects[@]}" >"$tmp/clean.out"; then
    cat "$tmp/clean.out"
    echo "core_link_check self-test: FAILED: the real objects do not link alone" >&2
    exit 1
fi
printf '%s\n' 'int gpufl__nvml_open(void); int cuInit(unsigned);' \
    'int gpufl__core_planted(void);' \
    'int gpufl__core_planted(void) { return gpufl__nvml_open() + cuInit(0); }' >"$tmp/planted.c"
"$cc" -c -fPIC "${link_flags[@]}" -o "$tmp/planted.o" "$tmp/planted.c"
mkdir -p "$tmp/core"
cp "$tmp/planted.o" "$tmp/core/planted.c.o"
if check "${objects[@]}" "$tmp/core/planted.c.o" >"$tmp/planted.out"; then
    echo "core_link_check self-test: FAILED: a core object calling gpufl__nvml_open and cuInit" \
        "linked alone" >&2
    exit 1
fi
cat "$tmp/planted.out"
for name in gpufl__nvml_open cuInit; do
    if ! grep -q "undefined: .*$name" "$tmp/planted.out"; then
        echo "core_link_check self-test: FAILED: the planted reference to $name is not named" >&2
        exit 1
    fi
done
echo "core_link_check self-test: ok (the real objects link alone; a planted vendor call fails)"
