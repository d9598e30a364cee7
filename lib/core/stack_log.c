// SPDX-License-Identifier: Apache-2.0
/*
 * stack_log.c - stack and frame records, each written once (see
 * stack_log.h).
 */
#include "core/stack_log.h"

#include "util/error.h"
#include "core/interp.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void load_symbols(gpufl__stack_log_t *sl) {
    if (sl->symbols_tried) return;
    sl->symbols_tried = 1;
    char why[200] = "";
    if (gpufl__symbols_create(&sl->symbols, sl->symbol_flags, why, sizeof why) != 0) {
        sl->symbols = NULL;
        snprintf(why, sizeof why, "out of memory for the symbol resolver");
    }
    if (why[0]) {
        size_t n = strlen(sl->note);
        snprintf(sl->note + n, sizeof sl->note - n, "%s%s", n ? "; " : "", why);
        gpufl__debug("stacks: %s", why);
    }
}

int gpufl__stack_log_init(gpufl__stack_log_t *sl, int source) {
    memset(sl, 0, sizeof *sl);
    sl->symbol_flags = source ? GPUFL_SYMBOLS_SOURCE : 0;
    int rc = gpufl__stacks_create(&sl->stacks, 0, sl->note, sizeof sl->note);
    if (rc) return rc;
    if (sl->note[0]) gpufl__debug("stacks: %s", sl->note);
    load_symbols(sl); /* at init, so that the capability record can say how frames are described */
    return 0;
}

void gpufl__stack_log_fini(gpufl__stack_log_t *sl) {
    gpufl__stacks_destroy(sl->stacks);
    gpufl__symbols_destroy(sl->symbols);
    free(sl->written);
    gpufl__idmap_fini(&sl->frame_ids);
    memset(sl, 0, sizeof *sl);
}

/* How a stack entry is described: a native frame's info, or an
 * interpreted frame's (language set; library from its describe). */
typedef struct frame_desc {
    gpufl__frame_info_t info;
    const char *language; /* NULL: a native frame */
    int library;
} frame_desc_t;

/* A frame record for pc, id as given, described by d. */
static void put_frame(gpufl__collector_t *c, enum gpufl__file_id channel, uint32_t id, uintptr_t pc,
                      const frame_desc_t *d) {
    const gpufl__frame_info_t *info = &d->info;
    gpufl__wire_frame_t f = {id,          pc,          info->module,   info->module_offset,
                             d->language, d->library,  info->function, info->file,
                             info->line,  info->source};
    gpufl__line_t l;
    gpufl__wire_frame(&l, &f);
    gpufl__collector_record(c, channel, &l);
}

/* Describes one stack entry: an interpreted frame by its interpreter, an
 * address by the symbol resolver. */
static void describe(gpufl__stack_log_t *sl, uintptr_t pc, frame_desc_t *d) {
    memset(d, 0, sizeof *d);
    d->info = (gpufl__frame_info_t){"", 0, "", 0, "", 0, ""};
    if ((uint64_t)pc & GPUFL_INTERP_KEY_BIT) {
        const gpufl__interp_reg_t *r = gpufl__interp_get();
        gpufl_interp_frame_t fr = {0};
        if (r == NULL) return; /* cannot be: keys come only from a registered walk */
        d->language = r->api.language;
        d->library = 1;
        if (!r->api.describe((uint64_t)pc & ~GPUFL_INTERP_KEY_BIT, &fr, r->api.user)) return;
        d->library = fr.library != 0;
        d->info.function = fr.function ? fr.function : "";
        d->info.file = fr.file ? fr.file : "";
        d->info.line = fr.line > 0 ? fr.line : 0;
        d->info.source = gpufl__symbols_source(sl->symbols, d->info.file, d->info.line);
        return;
    }
    /* gpufl's own frames were dropped: every frame left is a return address. */
    if (sl->symbols != NULL) gpufl__symbols_resolve(&d->info, sl->symbols, pc, 1);
}

/* Forgets which stacks and frames were written: the writer lost lines since
 * (a full pending buffer, a failed write), and any of them may have been
 * ours. Frames get new ids from here on, stacks are written again. */
static void forget_written(gpufl__stack_log_t *sl) {
    if (sl->written) memset(sl->written, 0, sl->written_cap);
    gpufl__idmap_fini(&sl->frame_ids);
    sl->rewrites++;
}

int64_t gpufl__stack_log_put(gpufl__stack_log_t *sl, gpufl__collector_t *c,
                             enum gpufl__file_id channel, uint32_t id) {
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
    uint64_t lost_now = gpufl__collector_lines_lost(c, channel);
    if (lost_now != sl->lost_seen) {
        sl->lost_seen = lost_now;
        forget_written(sl);
    }
    if (sl->written[id]) return id;
    /* Describe the new addresses first, outside the file's lock (DWARF and
     * source reading take time; application threads may wait on the lock). */
    frame_desc_t desc[GPUFL_STACK_DEPTH_MAX];
    uint32_t frames[GPUFL_STACK_DEPTH_MAX];
    uint8_t fresh[GPUFL_STACK_DEPTH_MAX]; /* its frame record is written below */
    for (size_t i = 0; i < depth; i++) {
        size_t known;
        int rc = gpufl__idmap_put(&sl->frame_ids, pcs[i], sl->frames + 1, &known);
        if (rc < 0) { /* frames entered above would have no record */
            forget_written(sl);
            return -1;
        }
        fresh[i] = rc == 0;
        frames[i] = fresh[i] ? (uint32_t)++sl->frames : (uint32_t)known;
        if (fresh[i]) describe(sl, pcs[i], &desc[i]);
    }
    uint64_t lost = lost_now;
    for (size_t i = 0; i < depth; i++)
        if (fresh[i]) put_frame(c, channel, frames[i], pcs[i], &desc[i]);
    gpufl__line_t l;
    gpufl__wire_stack(&l, id, frames, depth);
    gpufl__collector_record(c, channel, &l);
    /* Other threads' lost lines count too: at worst a stack written again. */
    sl->lost_seen = gpufl__collector_lines_lost(c, channel);
    int kept = sl->lost_seen == lost;
    if (!kept) { /* a record did not fit: the row names no stack, and all is written anew */
        forget_written(sl);
        return -1;
    }
    sl->written[id] = 1;
    sl->stacks_written++;
    return id;
}
