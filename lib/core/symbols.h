// SPDX-License-Identifier: Apache-2.0
/*
 * symbols.h - code addresses of the running process turned into module,
 * function, source file and line (and optionally the line's text), for the
 * stack traces captured at kernel launches and synchronizations.
 *
 * DWARF is read through elfutils' libdwfl, loaded at run time (dlopen of
 * libdw.so.1, never linked). Without it a reduced mode answers from dladdr
 * and the dynamic symbol tables: module, offset and exported function names,
 * no file or line. Runs on the collector thread, once per distinct address;
 * never on the hot path.
 *
 * Thread-safety: an instance is used by one thread at a time (the collector).
 * libdwfl's handles are not thread-safe, and the caches are not locked.
 * Separate instances may be used from separate threads.
 */
#ifndef GPUFL_CORE_SYMBOLS_H
#define GPUFL_CORE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__symbols gpufl__symbols_t;

/* Also read the source line's text (enable_source_collection). */
#define GPUFL_SYMBOLS_SOURCE (1u << 0)

typedef struct gpufl__frame_info {
    const char *module;       /* path of the loaded object holding pc; "" unknown */
    uint64_t module_offset;   /* pc minus the module's load bias (the address in the file) */
    const char *function;     /* demangled function name ("train_step(float*, int)"), "" unknown */
    uint64_t function_offset; /* pc minus the function's start */
    /* source file path as DWARF gives it (absolute when the comp dir is known), "" none */
    const char *file;
    int line; /* 0 when unknown */
    /* text of that line (no newline, trimmed of trailing space, at most 240 bytes, valid
     * UTF-8), "" when not collected or unreadable */
    const char *source;
} gpufl__frame_info_t;

/* Longest source text kept, in bytes (never cut inside a UTF-8 sequence). */
#define GPUFL_SYMBOLS_SOURCE_BYTES 240

/*
 * Creates a resolver for this process. flags: GPUFL_SYMBOLS_SOURCE or 0.
 * Always succeeds unless out of memory (GPUFL_ENOMEM, *out NULL). Without
 * libdw (dlopen of "libdw.so.1", or of $GPUFL_LIBDW_PATH when set, fails,
 * or a needed symbol is missing, or /proc/<pid>/maps cannot be read) it
 * works in a reduced mode: module, module_offset and function from dladdr /
 * the dynamic symbol table only, no file or line; why then says so
 * ("libdw.so.1 not found: frames have no file or line"). why is "" in full
 * mode. why may be NULL when why_size is 0.
 *
 * Debug info is looked for in the object itself, then in the usual local
 * places (/usr/lib/debug by build id and by .gnu_debuglink). When
 * DEBUGINFOD_URLS is set, only the build-id lookup is made, so that libdw
 * never fetches debug info over the network from the profiled process.
 */
int gpufl__symbols_create(gpufl__symbols_t **out, unsigned int flags, char *why, size_t why_size);

/*
 * Describes pc. return_address: pc is a return address (every frame but the
 * innermost), so the call instruction is at pc - 1 and that is what gets
 * looked up; module_offset and function_offset still describe pc itself.
 * Returns 1 when pc lies in a known module, 0 when not (out then holds ""
 * and 0 everywhere); bad addresses (0, kernel, unmapped) return 0, never
 * fault. "In a module" means inside one of the segments its ELF file loads
 * (anonymous memory such as JIT code is in none). When pc is in no module
 * reported so far, the process's modules are re-read once (objects
 * dlopen'ed after create); misses are not cached, so each costs a re-read
 * of /proc/<pid>/maps.
 *
 * function is the symbol table's name of the function holding the address,
 * demangled; when the line table places it in an inlined function, it is the
 * name of that innermost inlined function (from DWARF) instead, matching
 * file and line. function_offset is always from the start of the enclosing
 * out-of-line function (the symbol).
 *
 * Strings stay valid until destroy; the same pc returns the same pointers
 * (results are cached). Past the caches' caps (GPUFL_SYMBOLS_MAX_*),
 * addresses are still resolved but new strings come back as "".
 */
int gpufl__symbols_resolve(gpufl__frame_info_t *out, gpufl__symbols_t *s, uintptr_t pc,
                           int return_address);

/* 1 when file and line are available (libdw loaded), 0 in the reduced mode. */
int gpufl__symbols_full(const gpufl__symbols_t *s);

/* The text of line `line` of the file at path, as `source` above: "" when
 * the resolver was created without GPUFL_SYMBOLS_SOURCE, or the file or line
 * cannot be read. For frames described elsewhere (interpreted ones). */
const char *gpufl__symbols_source(gpufl__symbols_t *s, const char *path, int line);

/* Frees the instance and every string it returned. Accepts NULL. */
void gpufl__symbols_destroy(gpufl__symbols_t *s);

/* Caps on what an instance keeps. */
#define GPUFL_SYMBOLS_MAX_FRAMES       (1u << 17)   /* cached addresses */
#define GPUFL_SYMBOLS_MAX_STRING_BYTES (64u << 20)  /* interned strings */
#define GPUFL_SYMBOLS_MAX_FILE_BYTES   (16u << 20)  /* one source file read for its text */
#define GPUFL_SYMBOLS_MAX_SOURCE_BYTES (128u << 20) /* all source files kept */

#endif
