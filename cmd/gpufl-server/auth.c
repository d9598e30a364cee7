// SPDX-License-Identifier: Apache-2.0
/*
 * auth.c - API keys and passwords. A key is gpfl_<prefix>_<secret>: the prefix (public, stored
 * plain) finds the row, the BLAKE2b hash of the whole key proves it (compared in constant time).
 * Lookups are cached for GPUFL__KEY_CACHE_S seconds and last_used is batched, so a request
 * costs no database write and, while cached, no read.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_SLOTS    1024 /* key lookups cached; a slot is overwritten by a newer lookup */
#define TOUCH_SLOTS    4096 /* keys whose last_used waits for the next flush */
#define BEARER         "Bearer "
#define KEY_HEAD       "gpfl_"
#define PREFIX_LETTERS "abcdefghijkmnpqrstuvwxyz23456789" /* 32, none that read alike */

typedef struct cache_slot {
    char prefix[GPUFL__KEY_PREFIX_LEN + 1];
    int found; /* 0: the store had no such key (cached too, so guessing costs no query) */
    gpufl__key_row_t row;
    time_t fetched;
} cache_slot_t;

typedef struct touch_slot {
    int64_t key_id; /* 0: empty */
    int64_t unix_s;
} touch_slot_t;

struct gpufl__auth {
    gpufl__store_t *store;
    const gpufl__store_ops_t *ops;
    pthread_mutex_t lock; /* cache and touches */
    cache_slot_t cache[CACHE_SLOTS];
    touch_slot_t touches[TOUCH_SLOTS];
    size_t n_touches;
    pthread_t flusher;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    int stopping, flusher_running;
};

int gpufl__auth_init(void) { return sodium_init() < 0 ? GPUFL_EINVAL : 0; }

int gpufl__auth_allows(gpufl__role_t have, gpufl__role_t need) {
    return have == GPUFL__ROLE_ADMIN || have == need;
}

gpufl__role_t gpufl__auth_role_parse(const char *name) {
    if (!strcmp(name, "ingest")) return GPUFL__ROLE_INGEST;
    if (!strcmp(name, "read")) return GPUFL__ROLE_READ;
    if (!strcmp(name, "admin")) return GPUFL__ROLE_ADMIN;
    return (gpufl__role_t)0;
}

const char *gpufl__auth_role_name(gpufl__role_t role) {
    switch (role) {
    case GPUFL__ROLE_INGEST: return "ingest";
    case GPUFL__ROLE_READ: return "read";
    case GPUFL__ROLE_ADMIN: return "admin";
    }
    return "none";
}

static void key_hash(uint8_t hash[32], const char *key, size_t len) {
    crypto_generichash(hash, 32, (const unsigned char *)key, len, NULL, 0);
}

void gpufl__auth_key_generate(char key[GPUFL__KEY_LEN + 1], char prefix[GPUFL__KEY_PREFIX_LEN + 1],
                              uint8_t hash[32]) {
    unsigned char secret[32];
    char encoded[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    for (int i = 0; i < GPUFL__KEY_PREFIX_LEN; i++)
        prefix[i] = PREFIX_LETTERS[randombytes_uniform(sizeof PREFIX_LETTERS - 1)];
    prefix[GPUFL__KEY_PREFIX_LEN] = '\0';
    randombytes_buf(secret, sizeof secret);
    sodium_bin2base64(encoded, sizeof encoded, secret, sizeof secret,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(secret, sizeof secret);
    snprintf(key, GPUFL__KEY_LEN + 1, KEY_HEAD "%s_%s", prefix, encoded);
    key_hash(hash, key, strlen(key));
    sodium_memzero(encoded, sizeof encoded);
}

static int is_prefix_char(char c) { return c && strchr(PREFIX_LETTERS, c) != NULL; }

static int is_secret_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

int gpufl__auth_key_parse(const char *key, size_t len, char prefix[GPUFL__KEY_PREFIX_LEN + 1]) {
    size_t head = sizeof KEY_HEAD - 1;
    if (len != GPUFL__KEY_LEN || strncmp(key, KEY_HEAD, head) != 0) return GPUFL_EINVAL;
    for (size_t i = 0; i < GPUFL__KEY_PREFIX_LEN; i++)
        if (!is_prefix_char(key[head + i])) return GPUFL_EINVAL;
    if (key[head + GPUFL__KEY_PREFIX_LEN] != '_') return GPUFL_EINVAL;
    for (size_t i = head + GPUFL__KEY_PREFIX_LEN + 1; i < len; i++)
        if (!is_secret_char(key[i])) return GPUFL_EINVAL;
    memcpy(prefix, key + head, GPUFL__KEY_PREFIX_LEN);
    prefix[GPUFL__KEY_PREFIX_LEN] = '\0';
    return 0;
}

int gpufl__auth_password_hash(char *out, size_t size, const char *password) {
    if (size < crypto_pwhash_STRBYTES) return GPUFL_EINVAL;
    if (crypto_pwhash_str(out, password, strlen(password), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        return GPUFL_ENOMEM;
    return 0;
}

static size_t slot_of(const char *prefix) {
    size_t h = 5381;
    for (const char *p = prefix; *p; p++) h = h * 33 + (unsigned char)*p;
    return h % CACHE_SLOTS;
}

/* The key row for prefix, from the cache while it is fresh, else from the store. */
static int lookup(gpufl__auth_t *a, const char *prefix, int *found, gpufl__key_row_t *row) {
    time_t now = time(NULL);
    cache_slot_t *slot = &a->cache[slot_of(prefix)];
    pthread_mutex_lock(&a->lock);
    if (slot->fetched && now - slot->fetched < GPUFL__KEY_CACHE_S &&
        !strcmp(slot->prefix, prefix)) {
        *found = slot->found;
        *row = slot->row;
        pthread_mutex_unlock(&a->lock);
        return 0;
    }
    pthread_mutex_unlock(&a->lock);
    int rc = a->ops->key_find(a->store, row, prefix);
    if (rc != 0 && rc != GPUFL_ENOTFOUND) return rc;
    *found = rc == 0;
    pthread_mutex_lock(&a->lock);
    memcpy(slot->prefix, prefix, sizeof slot->prefix);
    slot->found = *found;
    slot->row = *row;
    slot->fetched = now;
    pthread_mutex_unlock(&a->lock);
    return 0;
}

static int flush_touches(gpufl__auth_t *a) {
    int64_t ids[TOUCH_SLOTS], when[TOUCH_SLOTS];
    size_t n = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < TOUCH_SLOTS; i++) {
        if (!a->touches[i].key_id) continue;
        ids[n] = a->touches[i].key_id;
        when[n++] = a->touches[i].unix_s;
        a->touches[i].key_id = 0;
    }
    a->n_touches = 0;
    pthread_mutex_unlock(&a->lock);
    if (!n) return 0;
    int rc = a->ops->keys_touch(a->store, ids, when, n);
    if (rc != 0) fprintf(stderr, "gpufl-server: last_used of %zu keys not saved (%d)\n", n, rc);
    return rc;
}

/* Notes a key's use in memory; returns 1 when the table is full enough to flush now. */
static int touch(gpufl__auth_t *a, int64_t key_id) {
    size_t i = (size_t)key_id % TOUCH_SLOTS;
    int full = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t probe = 0; probe < TOUCH_SLOTS; probe++, i = (i + 1) % TOUCH_SLOTS) {
        if (a->touches[i].key_id == key_id || a->touches[i].key_id == 0) {
            if (a->touches[i].key_id == 0) a->n_touches++;
            a->touches[i].key_id = key_id;
            a->touches[i].unix_s = (int64_t)time(NULL);
            break;
        }
    }
    full = a->n_touches > TOUCH_SLOTS / 2;
    pthread_mutex_unlock(&a->lock);
    return full;
}

int gpufl__auth_check(gpufl__auth_t *a, gpufl__principal_t *out, const char *header,
                      char prefix_out[GPUFL__KEY_PREFIX_LEN + 1]) {
    char prefix[GPUFL__KEY_PREFIX_LEN + 1];
    prefix_out[0] = '\0';
    if (!header || strncmp(header, BEARER, sizeof BEARER - 1) != 0) return GPUFL_EINVAL;
    const char *key = header + sizeof BEARER - 1;
    size_t len = strlen(key);
    if (gpufl__auth_key_parse(key, len, prefix) != 0) return GPUFL_EINVAL;
    memcpy(prefix_out, prefix, sizeof prefix);
    gpufl__key_row_t row;
    int found = 0;
    int rc = lookup(a, prefix, &found, &row);
    if (rc != 0) return rc;
    uint8_t hash[32];
    key_hash(hash, key, len);
    /* The hash is compared even for an unknown prefix, so timing tells nothing about which
     * prefixes exist. */
    int same = sodium_memcmp(hash, found ? row.hash : hash, 32) == 0;
    if (!found || !same || row.revoked) return GPUFL_EINVAL;
    out->key_id = row.id;
    out->workspace_id = row.workspace_id;
    out->role = row.role;
    memcpy(out->prefix, prefix, sizeof prefix);
    if (touch(a, row.id)) flush_touches(a);
    return 0;
}

static void *flusher_main(void *arg) {
    gpufl__auth_t *a = arg;
    pthread_mutex_lock(&a->stop_lock);
    while (!a->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += GPUFL__TOUCH_EVERY_S;
        pthread_cond_timedwait(&a->stop_cond, &a->stop_lock, &until);
        if (a->stopping) break;
        pthread_mutex_unlock(&a->stop_lock);
        flush_touches(a);
        pthread_mutex_lock(&a->stop_lock);
    }
    pthread_mutex_unlock(&a->stop_lock);
    return NULL;
}

int gpufl__auth_create(gpufl__auth_t **out, gpufl__store_t *store, const gpufl__store_ops_t *ops) {
    gpufl__auth_t *a = calloc(1, sizeof *a);
    if (!a) return GPUFL_ENOMEM;
    a->store = store;
    a->ops = ops;
    pthread_mutex_init(&a->lock, NULL);
    pthread_mutex_init(&a->stop_lock, NULL);
    pthread_cond_init(&a->stop_cond, NULL);
    if (pthread_create(&a->flusher, NULL, flusher_main, a) != 0) {
        gpufl__auth_destroy(a);
        return GPUFL_ETHREAD;
    }
    a->flusher_running = 1;
    *out = a;
    return 0;
}

void gpufl__auth_destroy(gpufl__auth_t *a) {
    if (!a) return;
    if (a->flusher_running) {
        pthread_mutex_lock(&a->stop_lock);
        a->stopping = 1;
        pthread_cond_signal(&a->stop_cond);
        pthread_mutex_unlock(&a->stop_lock);
        pthread_join(a->flusher, NULL);
    }
    flush_touches(a);
    pthread_mutex_destroy(&a->lock);
    pthread_mutex_destroy(&a->stop_lock);
    pthread_cond_destroy(&a->stop_cond);
    free(a);
}
