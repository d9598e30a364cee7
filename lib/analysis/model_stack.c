// SPDX-License-Identifier: Apache-2.0
/*
 * model_stack.c - the stacks domain of the model: frame and stack records
 * (the host call stacks that kernel and sync rows name). A stack's frames
 * are kept as ids while reading and turned into indices after.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An address written as "0x..." hex (or a plain integer): 0 and *out, or -1. */
static int hex_member(const json_t *rec, const char *key, uint64_t *out) {
    json_t *v = json_object_get(rec, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (!json_is_string(v)) return -1;
    const char *str = json_string_value(v);
    if (strncmp(str, "0x", 2) != 0 || str[2] == '\0') return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(str + 2, &end, 16);
    if (*end != '\0' || errno) return -1;
    *out = x;
    return 0;
}

/* Modules whose frames are not the application's: CUDA, gpufl, the C and C++
 * runtimes, the loader, and the Python interpreter's own code. Matched
 * against the file name's start. */
static int runtime_module(const char *path) {
    static const char *const prefixes[] = {
        "libcuda.",  "libcudart", "libcupti",   "libgpufl", "libnvidia-", "libc.so",
        "libc-",     "libstdc++", "libgcc_s",   "ld-linux", "libpthread", "libdl.",
        "libm.so",   "libunwind", "libpython3", "python3",  "libtorch",   "libc10",
        "libcublas", "libcudnn",  "libnccl",    "libdw.",   "libelf."};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (*base == '\0') return 1; /* no module: not known to be the application's */
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

static int on_frame(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t id;
    if (gpufl__reader_int(json_object_get(rec, "id"), &id) != 0 || id <= 0)
        return gpufl__model_bad_line(m, pos, "frame", "no positive integer id");
    size_t seen;
    if (gpufl__idmap_get(&m->frame_index, (uint64_t)id, &seen)) return 0; /* first kept */
    int rc;
    gpufl__model_frame_t *f = gpufl__model_append_row(ROWS(m, frames, max_frames), &rc);
    if (!f) return rc;
    f->id = id;
    if (hex_member(rec, "pc", &f->pc)) f->pc = 0;
    if (hex_member(rec, "offset", &f->offset)) f->offset = 0;
    f->module = gpufl__model_member_str(m, rec, "module");
    f->function = gpufl__model_member_str(m, rec, "function");
    f->file = gpufl__model_member_str(m, rec, "file");
    f->source = gpufl__model_member_str(m, rec, "source");
    f->language = gpufl__model_member_str(m, rec, "language");
    if (!f->module || !f->function || !f->file || !f->source || !f->language) return GPUFL_ENOMEM;
    int64_t line;
    f->line = gpufl__reader_int(json_object_get(rec, "line"), &line) == 0 && line > 0 ? line : 0;
    /* An interpreted frame is the application's unless its interpreter
     * said it is library code (absent: not known to be the application's). */
    f->user =
        *f->language ? json_is_false(json_object_get(rec, "library")) : !runtime_module(f->module);
    if (gpufl__idmap_put(&m->frame_index, (uint64_t)id, m->n_frames - 1, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the frame index");
    return 0;
}

/* A stack's frame ids are kept as ids until every frame record is read
 * (stack_frames holds ids then), and turned into indices after reading. */
static int on_stack(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t id;
    if (gpufl__reader_int(json_object_get(rec, "id"), &id) != 0 || id <= 0)
        return gpufl__model_bad_line(m, pos, "stack", "no positive integer id");
    json_t *frames = json_object_get(rec, "frames");
    if (!json_is_array(frames))
        return gpufl__model_bad_line(m, pos, "stack", "frames is not an array");
    size_t depth = json_array_size(frames);
    if (depth > GPUFL_MODEL_STACK_DEPTH_MAX)
        return gpufl__model_bad_line(m, pos, "stack", "%zu frames (at most %d)", depth,
                                     GPUFL_MODEL_STACK_DEPTH_MAX);
    for (size_t i = 0; i < depth; i++) {
        int64_t f;
        if (gpufl__reader_int(json_array_get(frames, i), &f) != 0 || f <= 0)
            return gpufl__model_bad_line(m, pos, "stack", "frame %zu is not a positive integer id",
                                         i);
    }
    size_t seen;
    if (gpufl__idmap_get(&m->stack_index, (uint64_t)id, &seen)) return 0; /* first kept */
    int rc;
    gpufl__model_stack_t *s = gpufl__model_append_row(ROWS(m, stacks, max_stacks), &rc);
    if (!s) return rc;
    for (size_t i = 0; i < depth && !rc; i++) /* reserve makes room for one more */
        rc = gpufl__model_reserve((void **)&m->stack_frames, &m->stack_frames_alloc,
                                  m->n_stack_frames + i, sizeof *m->stack_frames,
                                  SIZE_MAX / sizeof *m->stack_frames);
    if (rc) {
        m->n_stacks--;
        return rc < 0 ? rc : GPUFL_ENOMEM;
    }
    s->id = id;
    s->first = m->n_stack_frames;
    s->depth = depth;
    for (size_t i = 0; i < depth; i++) {
        int64_t f;
        gpufl__reader_int(json_array_get(frames, i), &f);
        m->stack_frames[m->n_stack_frames++] = (size_t)f;
    }
    if (gpufl__idmap_put(&m->stack_index, (uint64_t)id, m->n_stacks - 1, NULL) < 0)
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the stack index");
    return 0;
}

/* ---------------------------------------------------------------------- */
/* After reading                                                          */
/* ---------------------------------------------------------------------- */

/* Turns the frame ids of stacks into indices into frames (SIZE_MAX for an
 * undefined one) and counts references to undefined stacks and frames. */
static void join_stacks(gpufl__model_t *m) {
    for (size_t i = 0; i < m->n_stack_frames; i++) {
        size_t idx;
        if (gpufl__idmap_get(&m->frame_index, (uint64_t)m->stack_frames[i], &idx)) {
            m->stack_frames[i] = idx;
        } else {
            m->stack_frames[i] = SIZE_MAX;
            m->stacks_missing++;
        }
    }
    size_t idx;
    for (size_t i = 0; i < m->n_kernels; i++)
        if (m->kernels[i].stack > 0 &&
            !gpufl__idmap_get(&m->stack_index, (uint64_t)m->kernels[i].stack, &idx))
            m->stacks_missing++;
    for (size_t i = 0; i < m->n_syncs; i++)
        if (m->syncs[i].stack > 0 &&
            !gpufl__idmap_get(&m->stack_index, (uint64_t)m->syncs[i].stack, &idx))
            m->stacks_missing++;
}

void gpufl__model_finish_stacks(gpufl__model_t *m) { join_stacks(m); }

const gpufl__model_handler_t gpufl__model_stack_handlers[] = {
    {"frame", on_frame, NULL},
    {"stack", on_stack, NULL},
    {NULL, NULL, NULL},
};
