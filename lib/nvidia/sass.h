// SPDX-License-Identifier: Apache-2.0
/*
 * sass.h - the SASS of a captured cubin, by nvdisasm: each function's
 * instructions with their offsets and source lines, which the PC sampling
 * engine turns into `sass` records (docs/log-format.md, "`sass`").
 *
 * Contract
 * - nvdisasm is never looked for in a fixed place: $GPUFL_NVDISASM, else
 *   $CUDA_HOME/bin, $CUDA_PATH/bin, else the absolute directories of $PATH.
 * - gpufl__sass_disassemble writes the cubin to a private temporary file
 *   (mkostemp under $TMPDIR or /tmp, removed before it returns), runs
 *   `nvdisasm --print-code --print-line-info --print-line-info-inline
 *   --no-dataflow <file>` with posix_spawn (no shell), reads its output
 *   through a pipe (capped at GPUFL_SASS_OUTPUT_CAP_BYTES) and kills it after
 *   the timeout (GPUFL_SASS_TIMEOUT_MS). It blocks for as long as nvdisasm
 *   runs: call it off the hot path (the collector, or a thread of its own).
 * - The parser reads nvdisasm's text format: a function per `.text.<name>`
 *   section, an instruction per `/ *<hex offset>* /` line, source lines from
 *   `//## File "<path>", line <n>` comments (the first line of a block is
 *   the innermost frame of an inlined call; `.nv_debug_ptx_txt` entries are
 *   PTX lines and are skipped). A block holds for the instructions after it
 *   until the next block. Malformed input gives GPUFL_EFORMAT, never a read
 *   outside the input; every table has a cap.
 * - Threads: the functions keep no state between calls (but the test
 *   timeout); any number of threads may call them at once. A module is
 *   immutable once returned and may be read from any thread.
 */
#ifndef GPUFL_NVIDIA_SASS_H
#define GPUFL_NVIDIA_SASS_H

#include <stddef.h>
#include <stdint.h>

#define GPUFL_SASS_TIMEOUT_MS        60000               /* nvdisasm is killed after this */
#define GPUFL_SASS_OUTPUT_CAP_BYTES  ((size_t)256 << 20) /* nvdisasm's output, at most */
#define GPUFL_SASS_STDERR_KEPT_BYTES 4096                /* of nvdisasm's stderr, for messages */
#define GPUFL_SASS_TEXT_MAX_BYTES    512                 /* an instruction's text; longer is cut */
#define GPUFL_SASS_NAME_MAX_BYTES    65536 /* a function name or file path; longer: EFORMAT */
#define GPUFL_SASS_FUNCTIONS_MAX     (1u << 20)
#define GPUFL_SASS_FILES_MAX         (1u << 16)
#define GPUFL_SASS_INSTRUCTIONS_MAX  (1u << 24) /* in one module, all functions together */

/* One instruction. */
typedef struct gpufl__sass_instruction {
    uint32_t offset_bytes; /* from the start of its function (the `/ *0010* /` comment) */
    int32_t file;          /* index into the module's files, or -1 without line info */
    uint32_t line;         /* source line, 0 without line info */
    const char *text;      /* "@P0 BRA `(.L_x_1)": predicate kept; no offset, `;` or encoding */
} gpufl__sass_instruction_t;

/* One function (one `.text.<name>` section), its instructions in offset order. */
typedef struct gpufl__sass_function {
    const char *name; /* mangled, as in the cubin's symbol table */
    const gpufl__sass_instruction_t *instructions;
    size_t instruction_count;
} gpufl__sass_function_t;

/* A disassembled cubin. Every string lives as long as the module. */
typedef struct gpufl__sass_module {
    char arch[16];                          /* "sm_90"; "" when unknown */
    const gpufl__sass_function_t *functions; /* sorted by name (strcmp) */
    size_t function_count;
    const char *const *files; /* source paths, in order of first use */
    size_t file_count;
    struct gpufl__sass_arena *arena; /* private: the storage of all the above */
} gpufl__sass_module_t;

/*
 * Finds nvdisasm (see the contract for the order) and copies its path into
 * out. Returns 0; GPUFL_ENOTSUP with a one-line reason in why when
 * $GPUFL_NVDISASM names no executable file ("GPUFL_NVDISASM=/x/nvdisasm is
 * not an executable file: No such file or directory") or none is found
 * ("nvdisasm not found on CUDA_HOME, CUDA_PATH or PATH"); GPUFL_EINVAL when
 * the path does not fit in out.
 */
int gpufl__sass_find_nvdisasm(char *out, size_t size, char *why, size_t why_size);

/*
 * Disassembles size bytes of cubin (an ELF image of a CUDA module) with the
 * nvdisasm at path nvdisasm. On success *out is a new module, which the
 * caller frees with gpufl__sass_module_free; its arch comes from the ELF
 * header (e_flags), else from nvdisasm's `.headerflags`. On failure *out is
 * NULL and why holds one line: GPUFL_EINVAL (NULL argument), GPUFL_EFORMAT
 * (not a CUDA ELF image; output that cannot be parsed), GPUFL_EIO (temporary
 * file, spawn failure, nvdisasm exits non-zero: "nvdisasm exited with status
 * 1: <its stderr's first line>", killed by a signal, timed out, or its output
 * passed the cap), GPUFL_ENOMEM.
 */
int gpufl__sass_disassemble(gpufl__sass_module_t **out, const char *nvdisasm, const void *cubin,
                            size_t size, char *why, size_t why_size);

/*
 * As gpufl__sass_disassemble, for one function only (nvdisasm's
 * --cuda-function-index with the index of its symbol in the cubin's symbol
 * table): large modules (libraries of thousands of kernels) take nvdisasm
 * far longer whole. GPUFL_EFORMAT also when the symbol table has no such
 * name.
 */
int gpufl__sass_disassemble_function(gpufl__sass_module_t **out, const char *nvdisasm,
                                     const void *cubin, size_t size, const char *function,
                                     char *why, size_t why_size);

/* As gpufl__sass_disassemble_function, for n functions of one cubin in one
 * run of nvdisasm. Names the symbol table lacks are left out (and so are
 * missing from the module); GPUFL_EFORMAT when it has none of them. */
int gpufl__sass_disassemble_functions(gpufl__sass_module_t **out, const char *nvdisasm,
                                      const void *cubin, size_t size, const char *const *functions,
                                      size_t n, char *why, size_t why_size);

/* The index of the symbol `name` in a cubin's ELF symbol table (what
 * nvdisasm's --cuda-function-index takes). Returns 0, or GPUFL_EFORMAT when
 * the image has no symbol table or no such symbol; never reads outside the
 * image. */
int gpufl__sass_symbol_index(const void *cubin, size_t size, const char *name, uint32_t *index);

/* The reverse: the name of symbol `index` (CUPTI's functionIndex of a PC
 * record) in the image, pointing into it; NULL when the image has no symbol
 * table, the index is out of it or the symbol has no name. */
const char *gpufl__sass_symbol_name(const void *cubin, size_t size, uint32_t index);

/*
 * Parses len bytes of nvdisasm's output (no NUL needed). Returns 0 with a
 * new module in *out; GPUFL_EFORMAT when the text holds no function, a
 * function's offsets do not increase, a function appears twice, a name or
 * path passes GPUFL_SASS_NAME_MAX_BYTES or a table passes its cap;
 * GPUFL_ENOMEM. On failure *out is NULL and why says what and where ("line
 * 12: ...").
 */
int gpufl__sass_parse(gpufl__sass_module_t **out, const char *text, size_t len, char *why,
                      size_t why_size);

/* Frees a module. Accepts NULL. */
void gpufl__sass_module_free(gpufl__sass_module_t *m);

/* The function of that mangled name, or NULL (binary search). */
const gpufl__sass_function_t *gpufl__sass_find_function(const gpufl__sass_module_t *m,
                                                        const char *mangled_name);

/* The instruction at exactly that offset in f, or NULL (binary search). */
const gpufl__sass_instruction_t *gpufl__sass_find_instruction(const gpufl__sass_function_t *f,
                                                              uint32_t offset_bytes);

/*
 * The architecture a cubin's ELF header names ("sm_90") into out; returns 0,
 * or GPUFL_EFORMAT when cubin is no 64-bit CUDA ELF image or its e_flags
 * name no SM version.
 */
int gpufl__sass_cubin_arch(const void *cubin, size_t size, char *out, size_t out_size);

/* Ends the nvdisasm runs in progress in this process (each within about
 * 0.1 s: the call gives GPUFL_EIO, "cancelled"); later runs are not
 * affected. For a session that ends while disassembly runs. */
void gpufl__sass_cancel_running(void);

/* For tests: nvdisasm's timeout in milliseconds; 0 restores GPUFL_SASS_TIMEOUT_MS. */
void gpufl__sass_set_timeout_ms(int timeout_ms);

#endif
