#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fake_nvdisasm.sh - stands in for nvdisasm in tests/unit/test_sass.c, which
# runs it through GPUFL_NVDISASM. FAKE_NVDISASM_MODE says what it does:
#   fixture  print the file $FAKE_NVDISASM_FIXTURE (the default)
#   fail     write two lines to stderr and exit 1
#   noisy    write 200 KB to stderr, then fail (the caller must drain stderr)
#   garbage  print text that holds no function
#   sleep    sleep far past any test timeout
#   signal   die of SIGSEGV
# With FAKE_NVDISASM_RECORD set, it first writes its arguments there (one a
# line) and copies its last argument, the cubin, to $FAKE_NVDISASM_RECORD.cubin.
for last in "$@"; do :; done
if [ -n "$FAKE_NVDISASM_RECORD" ]; then
  printf '%s\n' "$@" > "$FAKE_NVDISASM_RECORD"
  cp "$last" "$FAKE_NVDISASM_RECORD.cubin"
fi
case "${FAKE_NVDISASM_MODE:-fixture}" in
  fixture) exec cat "$FAKE_NVDISASM_FIXTURE" ;;
  fail)
    echo "nvdisasm fatal   : Could not open input file '$last'" >&2
    echo "a second line that the message leaves out" >&2
    exit 1 ;;
  noisy)
    i=0
    while [ $i -lt 2000 ]; do
      echo "nvdisasm warning : line $i of a long complaint, padded to one hundred bytes or so ......" >&2
      i=$((i + 1))
    done
    exit 2 ;;
  garbage) echo "this is not a disassembly" ;;
  sleep) exec sleep 60 ;;
  signal) kill -SEGV $$ ;;
  *) echo "fake_nvdisasm: unknown mode $FAKE_NVDISASM_MODE" >&2; exit 3 ;;
esac
