#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a crash happened, from a core file, without a debugger.

A diagnosis aid for the GPU machine (which has no gdb): reads an x86-64 ELF
core file and prints, for each thread, the signal it held, its instruction
pointer and the mapped file and offset that address falls in; for the thread
that took the signal, also the words on its stack that point into executable
mappings (a crude backtrace: return addresses, and some stale values). Offsets
can be turned into functions afterwards with `addr2line -f -e LIB OFFSET` or
`nm -D` on a machine that has the library.

Usage: core_where.py CORE [--stack-words 4096] [--frames 40]
"""
import argparse
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
NT_PRSTATUS, NT_FILE = 1, 0x46494C45
PR_REG_OFFSET = 112  # offset of pr_reg in struct elf_prstatus (x86-64)
RIP, RSP = 16, 19    # indices in struct user_regs_struct


def notes(data, off, size):
    end = off + size
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        off += 12
        name = data[off:off + namesz].rstrip(b"\0")
        off += (namesz + 3) & ~3
        desc = data[off:off + descsz]
        off += (descsz + 3) & ~3
        yield name, ntype, desc


def parse(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"core_where: {path} is not a 64-bit ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, threads, files = [], [], []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _pa, p_filesz, _memsz, _al = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_NOTE:
            for name, ntype, desc in notes(data, p_offset, p_filesz):
                if ntype == NT_PRSTATUS and len(desc) >= PR_REG_OFFSET + 27 * 8:
                    signo, = struct.unpack_from("<i", desc, 0)
                    cursig, = struct.unpack_from("<H", desc, 12)
                    pid, = struct.unpack_from("<i", desc, 32)
                    regs = struct.unpack_from("<27Q", desc, PR_REG_OFFSET)
                    threads.append({"tid": pid, "signal": cursig or signo,
                                    "rip": regs[RIP], "rsp": regs[RSP]})
                elif ntype == NT_FILE and name == b"CORE":
                    count, page = struct.unpack_from("<QQ", desc, 0)
                    ranges = [struct.unpack_from("<QQQ", desc, 16 + 24 * k) for k in range(count)]
                    names = desc[16 + 24 * count:].split(b"\0")
                    for (start, end, pgoff), nm in zip(ranges, names):
                        files.append((start, end, pgoff * page, nm.decode(errors="replace")))
    return data, loads, threads, files


def where(addr, files):
    for start, end, off, name in files:
        if start <= addr < end:
            return f"{name}+0x{addr - start + off:x}"
    return None


def read_word(data, loads, addr):
    for vaddr, off, size in loads:
        if vaddr <= addr < vaddr + size - 7:
            return struct.unpack_from("<Q", data, off + addr - vaddr)[0]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("core")
    ap.add_argument("--stack-words", type=int, default=4096)
    ap.add_argument("--frames", type=int, default=40)
    a = ap.parse_args()
    data, loads, threads, files = parse(a.core)
    if not threads:
        raise SystemExit("core_where: no thread status notes (not a core file?)")
    print(f"{len(threads)} threads, {len(files)} mapped files")
    for t in threads:
        print(f"thread {t['tid']} signal {t['signal']} rip 0x{t['rip']:x} "
              f"{where(t['rip'], files) or '(not in a mapped file)'}")
    faulting = threads[0]  # the kernel writes the signalled thread first
    print(f"\nstack of thread {faulting['tid']} (words pointing into mapped files):")
    shown = 0
    for k in range(a.stack_words):
        w = read_word(data, loads, faulting["rsp"] + 8 * k)
        if w is None:
            break
        loc = where(w, files)
        if loc and not loc.startswith("/dev/") and "[" not in loc:
            print(f"  rsp+0x{8 * k:x}: {loc}")
            shown += 1
            if shown >= a.frames:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
