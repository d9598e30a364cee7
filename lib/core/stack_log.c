/*
 * stack_log.c - stack and frame records, each written once (see
 * stack_log.h).
 */
#include "core/stack_log.h"

#include "core/error.h"
#include "core/jsonw.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void load_symbols(gpufl_stack_log_t *sl) {
    if (sl->symbols_tried) return;
    sl->symbols_tried = 1;
    char why[200] = "";
    if (gpufl__symbols_create(sl->symbol_flags, &sl->symbols, why, sizeof why) != 0) {
        sl->symbols = NULL;
        snprintf(why, sizeof why, "out of memory for the symbol resolver");
    }
    if (why[0]) {
        size_t n = strlen(sl->note);
        snprintf(sl->note + n, sizeof sl->note - n, "%s%s", n ? "; " : "", why);
        gpufl__debug("stacks: %s", why);
    }
}

int gpufl__stack_log_init(gpufl_stack_log_t *sl, int source) {
    memset(sl, 0, sizeof *sl);
    sl->symbol_flags = source ? GPUFL_SYMBOLS_SOURCE : 0;
    int rc = gpufl__stacks_create(0, &sl->stacks, sl->note, sizeof sl->note);
    if (rc) return rc;
    if (sl->note[0]) gpufl__debug("stacks: %s", sl->note);
    load_symbols(sl); /* at init, so that the capability record can say how frames are described */
    return 0;
}

void gpufl__stack_log_fini(gpufl_stack_log_t *sl) {
    gpufl__stacks_destroy(sl->stacks);
    gpufl__symbols_destroy(sl->symbols);
    free(sl->written);
    free(sl->frame_pcs);
    free(sl->frame_ids);
    memset(sl, 0, sizeof *sl);
}

static size_t pc_hash(uintptr_t pc) { return (size_t)(((uint64_t)pc * 0x9e3779b97f4a7c15u) >> 17); }

/* Slot of pc in the frame table: its own, or the empty one it would take. */
static size_t pc_slot(const gpufl_stack_log_t *sl, uintptr_t pc) {
    size_t mask = sl->frame_slots - 1, i = pc_hash(pc) & mask;
    while (sl->frame_ids[i] && sl->frame_pcs[i] != pc) i = (i + 1) & mask;
    return i;
}

/* Room for one more frame: the table kept at most half full. */
static int grow_frames(gpufl_stack_log_t *sl) {
    if (2 * (sl->frames + 1) <= sl->frame_slots) return 0;
    size_t n = sl->frame_slots ? 2 * sl->frame_slots : 1024;
    uintptr_t *pcs = calloc(n, sizeof *pcs);
    uint32_t *ids = calloc(n, sizeof *ids);
    if (pcs == NULL || ids == NULL) {
        free(pcs);
        free(ids);
        return GPUFL_ENOMEM;
    }
    gpufl_stack_log_t grown = *sl;
    grown.frame_pcs = pcs;
    grown.frame_ids = ids;
    grown.frame_slots = n;
    for (size_t i = 0; i < sl->frame_slots; i++) {
        if (!sl->frame_ids[i]) continue;
        size_t j = pc_slot(&grown, sl->frame_pcs[i]);
        pcs[j] = sl->frame_pcs[i];
        ids[j] = sl->frame_ids[i];
    }
    free(sl->frame_pcs);
    free(sl->frame_ids);
    sl->frame_pcs = pcs;
    sl->frame_ids = ids;
    sl->frame_slots = n;
    return 0;
}

static void kv_hex(gpufl_buf_t *b, const char *key, uint64_t v) {
    char hex[24];
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)v);
    gpufl__buf_kv_str(b, key, hex);
}

static void kv_str_or_null(gpufl_buf_t *b, const char *key, const char *s) {
    if (s && *s) {
        gpufl__buf_kv_str(b, key, s);
    } else {
        gpufl__buf_key(b, key);
        gpufl__buf_puts(b, "null");
    }
}

/* The frame id of pc, writing its frame record when it is new; 0 when out
 * of memory. return_address: pc is not the innermost frame. */
static uint32_t frame_id(gpufl_stack_log_t *sl, gpufl_writer_t *f, uintptr_t pc,
                         int return_address) {
    if (grow_frames(sl)) return 0;
    size_t i = pc_slot(sl, pc);
    if (sl->frame_ids[i]) return sl->frame_ids[i];
    uint32_t id = (uint32_t)++sl->frames;
    sl->frame_pcs[i] = pc;
    sl->frame_ids[i] = id;
    gpufl_frame_info_t info;
    memset(&info, 0, sizeof info);
    if (sl->symbols == NULL || !gpufl__symbols_resolve(sl->symbols, pc, return_address, &info))
        info = (gpufl_frame_info_t){"", 0, "", 0, "", 0, ""};
    gpufl_buf_t *b = gpufl__writer_record(f, "frame");
    gpufl__buf_kv_i64(b, "id", id);
    kv_hex(b, "pc", pc);
    kv_str_or_null(b, "module", info.module);
    if (*info.module) kv_hex(b, "offset", info.module_offset);
    kv_str_or_null(b, "function", info.function);
    kv_str_or_null(b, "file", info.file);
    if (info.line > 0) gpufl__buf_kv_i64(b, "line", info.line);
    if (info.source && *info.source) gpufl__buf_kv_str(b, "source", info.source);
    gpufl__writer_end_record(f);
    return id;
}

int64_t gpufl__stack_log_put(gpufl_stack_log_t *sl, gpufl_writer_t *f, uint32_t id) {
    const uintptr_t *pcs;
    size_t depth = gpufl__stacks_get(sl->stacks, id, &pcs);
    if (id == 0 || depth == 0) return -1;
    if (id >= sl->written_cap) {
        size_t cap = sl->written_cap ? sl->written_cap : 256;
        while (cap <= id) cap *= 2;
        uint8_t *w = realloc(sl->written, cap);
        if (w == NULL) return -1;
        memset(w + sl->written_cap, 0, cap - sl->written_cap);
        sl->written = w;
        sl->written_cap = cap;
    }
    if (sl->written[id]) return id;
    uint32_t frames[GPUFL_STACK_DEPTH_MAX];
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < depth; i++) {
        /* gpufl's own frames were dropped: every frame left is a return address. */
        frames[i] = frame_id(sl, f, pcs[i], 1);
        if (frames[i] == 0) {
            pthread_mutex_unlock(&f->lock);
            return -1;
        }
    }
    gpufl_buf_t *b = gpufl__writer_record(f, "stack");
    gpufl__buf_kv_i64(b, "id", id);
    gpufl__buf_key(b, "frames");
    gpufl__buf_putc(b, '[');
    for (size_t i = 0; i < depth; i++) {
        if (i) gpufl__buf_putc(b, ',');
        gpufl__buf_put_i64(b, frames[i]);
    }
    gpufl__buf_putc(b, ']');
    gpufl__writer_end_record(f);
    pthread_mutex_unlock(&f->lock);
    sl->written[id] = 1;
    sl->stacks_written++;
    return id;
}
