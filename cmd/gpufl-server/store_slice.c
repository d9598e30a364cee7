// SPDX-License-Identifier: Apache-2.0
/*
 * store_slice.c - a window that arrives in several requests (slices: the live tail of a window
 * still being written, or a window split after a 413). The rules of docs/protocol.md "A window
 * in slices" live here once, so both engines decide alike; each engine only reads and writes
 * the window's row inside its transaction.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <sodium.h>
#include <string.h>
#include <zlib.h>

_Static_assert(sizeof(crypto_hash_sha256_state) == GPUFL__SHA256_STATE_BYTES,
               "the stored SHA-256 state is libsodium's struct, byte for byte");

static int ends_window(const gpufl__window_t *w) { return !w->more; }

/* A resend of the last slice stored: same place, same bytes, same prefix, same ending. */
static int retries_last(const gpufl__window_row_t *st, const gpufl__window_t *w) {
    return w->offset == st->last_offset && !memcmp(w->sha256, st->last_sha256, 32) &&
           (w->offset == 0 || w->prefix_crc32 == st->last_prefix_crc32) &&
           ends_window(w) == !!st->final;
}

gpufl__window_outcome_t gpufl__slice_decide(const gpufl__window_row_t *st,
                                            const gpufl__window_t *w) {
    if (!st) return w->offset == 0 ? 0 : GPUFL__WINDOW_RANGE;
    if (retries_last(st, w)) return GPUFL__WINDOW_DUPLICATE;
    /* A sealed window sent whole: the same bytes, or others (of any length: a sender whose
     * window holds more than was sealed disagrees with the stored copy as much as one whose
     * bytes differ, and resending from stored_bytes could not help it). */
    if (w->offset == 0 && ends_window(w) && st->final)
        return w->bytes == st->bytes && !memcmp(w->sha256, st->sha256, 32) ? GPUFL__WINDOW_DUPLICATE
                                                                           : GPUFL__WINDOW_CONFLICT;
    if (!st->final && w->offset == st->bytes && w->offset > 0)
        return st->has_crc32 && w->prefix_crc32 == st->crc32 ? 0 : GPUFL__WINDOW_CONFLICT;
    return GPUFL__WINDOW_RANGE;
}

int gpufl__slice_advance(gpufl__window_row_t *out, const gpufl__window_row_t *st,
                         const gpufl__window_t *w) {
    crypto_hash_sha256_state state;
    if (!w->data && (w->offset > 0 || w->more || st))
        return gpufl__store_fail(GPUFL_EINVAL, "store: a slice of a window needs its bytes");
    if (st && !st->has_state)
        return gpufl__store_fail(GPUFL_EINVAL, "store: window %s has no running hash to extend",
                                 w->window_id);
    *out = st ? *st : (gpufl__window_row_t){0};
    if (st)
        memcpy(&state, st->state, sizeof state);
    else
        crypto_hash_sha256_init(&state);
    uint32_t before = st ? st->crc32 : 0;
    if (w->data) {
        crypto_hash_sha256_update(&state, w->data, (unsigned long long)w->bytes);
        /* zlib's crc32 continues a running value; it takes at most UINT_MAX bytes a call */
        uLong crc = before;
        for (int64_t at = 0; at < w->bytes;) {
            uInt n = w->bytes - at > (int64_t)(1u << 30) ? 1u << 30 : (uInt)(w->bytes - at);
            crc = crc32(crc, w->data + at, n);
            at += n;
        }
        out->crc32 = (uint32_t)crc;
        out->has_crc32 = 1;
        crypto_hash_sha256_state copy = state;
        crypto_hash_sha256_final(&copy, out->sha256);
    } else { /* a whole window given by its hash alone */
        memcpy(out->sha256, w->sha256, 32);
        out->has_crc32 = 0;
    }
    out->bytes = (st ? st->bytes : 0) + w->bytes;
    out->final = ends_window(w);
    out->rows = (st ? st->rows : 0) + w->rows;
    out->slices = (st ? st->slices : 0) + 1;
    out->has_state = !out->final;
    if (out->has_state) memcpy(out->state, &state, sizeof state);
    out->last_offset = w->offset;
    memcpy(out->last_sha256, w->sha256, 32);
    out->last_prefix_crc32 = w->offset > 0 ? before : 0;
    sodium_memzero(&state, sizeof state);
    return 0;
}
