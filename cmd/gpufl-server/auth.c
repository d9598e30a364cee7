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

int gpufl__auth_flush(gpufl__auth_t *a) { return flush_touches(a); }

void gpufl__auth_forget(gpufl__auth_t *a, const char *prefix) {
    cache_slot_t *slot = &a->cache[slot_of(prefix)];
    pthread_mutex_lock(&a->lock);
    if (!strcmp(slot->prefix, prefix)) slot->fetched = 0;
    pthread_mutex_unlock(&a->lock);
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

/* ---- users: login sessions, CSRF, login rate limit ----------------------------------------
 * A login gives a cookie of 32 random bytes; the database keeps only its BLAKE2b hash (hex),
 * the CSRF token handed out with it and an expiry. A cookie session acts with role read in its
 * user's workspace. Failed logins are counted per workspace and user name in this process's
 * memory (several servers each count their own). */

#define LOGIN_SLOTS      256 /* (workspace, user) names whose failures are counted */
#define LOGIN_NAME_MAX   256
#define DUMMY_PASSWORD_N 24

typedef struct login_slot {
    char name[2 * LOGIN_NAME_MAX + 2]; /* workspace NUL-joined user; "" empty */
    int64_t window_start;
    int failures;
} login_slot_t;

static pthread_mutex_t login_lock = PTHREAD_MUTEX_INITIALIZER;
static login_slot_t login_slots[LOGIN_SLOTS];
/* An Argon2id hash of a random password, made at start, verified against for an unknown
 * user so that its answer takes as long as a wrong password's. */
static char dummy_hash[crypto_pwhash_STRBYTES];
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void dummy_make(void) {
    unsigned char pw[DUMMY_PASSWORD_N];
    randombytes_buf(pw, sizeof pw);
    if (crypto_pwhash_str(dummy_hash, (const char *)pw, sizeof pw,
                          crypto_pwhash_OPSLIMIT_INTERACTIVE,
                          crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0)
        dummy_hash[0] = '\0';
}

static login_slot_t *login_slot(const char *workspace, const char *user, int64_t now, int take) {
    char name[sizeof login_slots[0].name];
    snprintf(name, sizeof name, "%s/%s", workspace, user);
    size_t h = slot_of(name) % LOGIN_SLOTS, oldest = h;
    for (size_t probe = 0; probe < 8; probe++) {
        login_slot_t *s = &login_slots[(h + probe) % LOGIN_SLOTS];
        if (!strcmp(s->name, name)) return s;
        if (s->window_start < login_slots[oldest].window_start) oldest = (h + probe) % LOGIN_SLOTS;
    }
    if (!take) return NULL;
    login_slot_t *s = &login_slots[oldest]; /* the stalest of the probed slots gives way */
    snprintf(s->name, sizeof s->name, "%s", name);
    s->window_start = now;
    s->failures = 0;
    return s;
}

int gpufl__auth_login_allowed(const char *workspace, const char *user, int *retry_after_s) {
    int64_t now = (int64_t)time(NULL);
    pthread_mutex_lock(&login_lock);
    login_slot_t *s = login_slot(workspace, user, now, 0);
    int ok = 1;
    if (s && now - s->window_start < GPUFL__LOGIN_WINDOW_S &&
        s->failures >= GPUFL__LOGIN_FAILURES_MAX) {
        ok = 0;
        *retry_after_s = (int)(s->window_start + GPUFL__LOGIN_WINDOW_S - now);
        if (*retry_after_s < 1) *retry_after_s = 1;
    }
    pthread_mutex_unlock(&login_lock);
    return ok;
}

static void login_failed(const char *workspace, const char *user) {
    int64_t now = (int64_t)time(NULL);
    pthread_mutex_lock(&login_lock);
    login_slot_t *s = login_slot(workspace, user, now, 1);
    if (now - s->window_start >= GPUFL__LOGIN_WINDOW_S) {
        s->window_start = now;
        s->failures = 0;
    }
    s->failures++;
    pthread_mutex_unlock(&login_lock);
}

static void token_hex(char out[65], const char *token) {
    uint8_t hash[32];
    key_hash(hash, token, strlen(token));
    sodium_bin2hex(out, 65, hash, sizeof hash);
}

static void random_token(char *out, size_t size) {
    unsigned char raw[32];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2base64(out, size, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
}

typedef struct user_found {
    int n;
    char id[32], workspace_id[32];
    char hash[crypto_pwhash_STRBYTES];
} user_found_t;

static int user_row(void *arg, int n, const char *const *v, const char *const *names) {
    user_found_t *u = arg;
    (void)names;
    if (n < 3 || !v[0] || !v[1] || !v[2]) return 0;
    snprintf(u->id, sizeof u->id, "%s", v[0]);
    snprintf(u->workspace_id, sizeof u->workspace_id, "%s", v[1]);
    snprintf(u->hash, sizeof u->hash, "%s", v[2]);
    u->n++;
    return 0;
}

int gpufl__auth_login(gpufl__auth_t *a, gpufl__login_t *out, const char *workspace,
                      const char *user, const char *password) {
    pthread_once(&dummy_once, dummy_make);
    user_found_t u = {0};
    const char *find[] = {workspace, user};
    int rc = a->ops->query(a->store,
                           "SELECT u.id, u.workspace_id, u.password_hash FROM users u JOIN "
                           "workspaces w ON w.id = u.workspace_id WHERE w.name = ? AND u.name = ?",
                           find, 2, user_row, &u);
    if (rc != 0) return rc;
    /* An unknown user costs one verification too, against a hash no password matches. */
    const char *hash = u.n == 1 ? u.hash : dummy_hash;
    int good = crypto_pwhash_str_verify(hash, password, strlen(password)) == 0 && u.n == 1;
    if (!good) {
        login_failed(workspace, user);
        return GPUFL_EINVAL;
    }
    random_token(out->cookie, sizeof out->cookie);
    random_token(out->csrf, sizeof out->csrf);
    char hex[65], now[32], expires[32];
    token_hex(hex, out->cookie);
    int64_t t = (int64_t)time(NULL);
    snprintf(now, sizeof now, "%lld", (long long)t);
    snprintf(expires, sizeof expires, "%lld", (long long)(t + GPUFL__LOGIN_SESSION_S));
    const char *ins[] = {u.workspace_id, u.id, hex, out->csrf, now, expires};
    rc = a->ops->query(a->store,
                       "INSERT INTO login_sessions (workspace_id, user_id, token_hash, csrf, "
                       "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                       ins, 6, NULL, NULL);
    if (rc == 0) {
        /* Expired sessions go when someone logs in: no timer, and the table stays small. */
        const char *old[] = {now};
        a->ops->query(a->store, "DELETE FROM login_sessions WHERE expires_at < ?", old, 1, NULL,
                      NULL);
    }
    return rc;
}

typedef struct cookie_found {
    int n;
    int64_t id, workspace_id, user_id;
    char csrf[GPUFL__TOKEN_LEN + 1];
    char user[LOGIN_NAME_MAX], workspace[LOGIN_NAME_MAX];
} cookie_found_t;

static int cookie_row(void *arg, int n, const char *const *v, const char *const *names) {
    cookie_found_t *c = arg;
    (void)names;
    if (n < 6 || !v[0] || !v[1] || !v[2] || !v[3]) return 0;
    c->id = strtoll(v[0], NULL, 10);
    c->workspace_id = strtoll(v[1], NULL, 10);
    c->user_id = strtoll(v[2], NULL, 10);
    snprintf(c->csrf, sizeof c->csrf, "%s", v[3]);
    snprintf(c->user, sizeof c->user, "%s", v[4] ? v[4] : "");
    snprintf(c->workspace, sizeof c->workspace, "%s", v[5] ? v[5] : "");
    c->n++;
    return 0;
}

int gpufl__auth_cookie_check(gpufl__auth_t *a, gpufl__principal_t *out, const char *cookie,
                             const char *csrf_header) {
    if (!cookie || strlen(cookie) != GPUFL__TOKEN_LEN) return GPUFL_EINVAL;
    char hex[65], now[32];
    token_hex(hex, cookie);
    snprintf(now, sizeof now, "%lld", (long long)time(NULL));
    const char *find[] = {hex, now};
    cookie_found_t c = {0};
    int rc = a->ops->query(a->store,
                           "SELECT l.id, l.workspace_id, l.user_id, l.csrf, u.name, w.name FROM "
                           "login_sessions l JOIN users u ON u.id = l.user_id JOIN workspaces w "
                           "ON w.id = l.workspace_id WHERE l.token_hash = ? AND l.expires_at > ?",
                           find, 2, cookie_row, &c);
    if (rc != 0) return rc;
    if (c.n != 1) return GPUFL_EINVAL;
    memset(out, 0, sizeof *out);
    out->workspace_id = c.workspace_id;
    out->role = GPUFL__ROLE_READ;
    out->login_id = c.id;
    out->user_id = c.user_id;
    snprintf(out->user, sizeof out->user, "%s", c.user);
    snprintf(out->workspace, sizeof out->workspace, "%s", c.workspace);
    out->csrf_ok = csrf_header && strlen(csrf_header) == strlen(c.csrf) &&
                   sodium_memcmp(csrf_header, c.csrf, strlen(c.csrf)) == 0;
    return 0;
}

int gpufl__auth_logout(gpufl__auth_t *a, const gpufl__principal_t *who) {
    char id[32], ws[32];
    snprintf(id, sizeof id, "%lld", (long long)who->login_id);
    snprintf(ws, sizeof ws, "%lld", (long long)who->workspace_id);
    const char *p[] = {id, ws};
    return a->ops->query(a->store, "DELETE FROM login_sessions WHERE id = ? AND workspace_id = ?",
                         p, 2, NULL, NULL);
}

/* ---- the login routes ------------------------------------------------------------------------ */

static char *cookie_header(const gpufl__request_t *req, const char *value, long max_age_s) {
    char *out = malloc(256);
    if (out)
        snprintf(out, 256, "%s=%s; Path=/; Max-Age=%ld; HttpOnly; SameSite=Strict%s",
                 GPUFL__SESSION_COOKIE, value, max_age_s,
                 req->server->settings->tls_cert_path ? "; Secure" : "");
    return out;
}

void gpufl__auth_route_login(gpufl__request_t *req, gpufl__reply_t *rep) {
    json_error_t err;
    json_t *doc = json_loadb(req->body ? req->body : "", req->body_len, 0, &err);
    const char *ws = json_string_value(json_object_get(doc, "workspace"));
    const char *user = json_string_value(json_object_get(doc, "user"));
    const char *password = json_string_value(json_object_get(doc, "password"));
    if (!ws || !user || !password || strlen(ws) >= LOGIN_NAME_MAX ||
        strlen(user) >= LOGIN_NAME_MAX || strlen(password) > 1024) {
        gpufl__reply_error(rep, 400,
                           "expected {\"workspace\": \"...\", \"user\": \"...\", \"password\": "
                           "\"...\"} (names under 256 bytes, a password of at most 1024)");
        json_decref(doc);
        return;
    }
    static _Thread_local char retry[16];
    int retry_s = 0;
    gpufl__login_t login;
    if (!gpufl__auth_login_allowed(ws, user, &retry_s)) {
        gpufl__reply_error(rep, 429, "too many failed logins for this user: retry later");
        snprintf(retry, sizeof retry, "%d", retry_s);
        rep->header_name = "Retry-After";
        rep->header_value = retry;
    } else {
        int rc = gpufl__auth_login(req->server->auth, &login, ws, user, password);
        if (rc == GPUFL_EINVAL) {
            gpufl__reply_error(rep, 401, "unknown user or wrong password");
        } else if (rc != 0) {
            gpufl__reply_error(rep, gpufl__store_status(rc), "logins cannot be checked now");
        } else {
            rep->status = 200;
            rep->json = json_pack("{s:s,s:s,s:s,s:s,s:I}", "workspace", ws, "user", user, "role",
                                  "read", "csrf_token", login.csrf, "expires_in_s",
                                  (json_int_t)GPUFL__LOGIN_SESSION_S);
            rep->cookie = cookie_header(req, login.cookie, GPUFL__LOGIN_SESSION_S);
        }
        sodium_memzero(&login, sizeof login);
    }
    /* The password lives in the parsed document: wiped before it is freed. */
    json_t *pw = json_object_get(doc, "password");
    if (json_is_string(pw)) sodium_memzero((char *)json_string_value(pw), json_string_length(pw));
    json_decref(doc);
}

void gpufl__auth_route_logout(gpufl__request_t *req, gpufl__reply_t *rep) {
    if (!req->who.login_id) {
        gpufl__reply_error(rep, 400, "logout ends a login session (cookie), not a key");
        return;
    }
    int rc = gpufl__auth_logout(req->server->auth, &req->who);
    if (rc != 0) {
        gpufl__reply_error(rep, gpufl__store_status(rc), "the login could not be ended");
        return;
    }
    rep->status = 200;
    rep->json = json_pack("{s:s}", "status", "logged out");
    rep->cookie = cookie_header(req, "", 0);
}

void gpufl__auth_route_me(gpufl__request_t *req, gpufl__reply_t *rep) {
    const gpufl__principal_t *w = &req->who;
    rep->status = 200;
    if (w->login_id)
        rep->json = json_pack("{s:s,s:s,s:s,s:s}", "kind", "login", "workspace", w->workspace,
                              "user", w->user, "role", gpufl__auth_role_name(w->role));
    else
        rep->json = json_pack("{s:s,s:s,s:s}", "kind", "key", "key", w->prefix, "role",
                              gpufl__auth_role_name(w->role));
}
