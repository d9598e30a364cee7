// SPDX-License-Identifier: Apache-2.0
/*
 * routes_keys.c - the workspace's API keys, managed from the dashboard's settings: list, create
 * (the key's plaintext answered once, only its hash stored) and revoke. A login (cookie and
 * CSRF token) manages the read and ingest keys of its own workspace; an admin key all of them.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MAX_BYTES 128
#define KEYS_LIST_MAX   10000 /* keys one answer lists; past it "truncated": true */

/* Who may manage keys, and which: a login may create and revoke read and ingest keys, an
 * admin key any key; read and ingest keys none (answered 403 here). A login never makes an
 * admin key, so a stolen cookie grants no more than a dashboard user already has. */
static int may_manage(gpufl__request_t *req, gpufl__reply_t *rep) {
    if (req->who.login_id || req->who.role == GPUFL__ROLE_ADMIN) return 1;
    gpufl__reply_error(rep, 403, "keys are managed by a logged-in user or an admin key");
    json_object_set_new(rep->json, "role", json_string(gpufl__auth_role_name(req->who.role)));
    return 0;
}

static int may_touch_role(gpufl__request_t *req, gpufl__role_t role) {
    return req->who.role == GPUFL__ROLE_ADMIN && !req->who.login_id ? 1 : role != GPUFL__ROLE_ADMIN;
}

typedef struct keys_list {
    json_t *keys;
    int truncated;
} keys_list_t;

static json_t *int_or_null(const char *v) {
    return v ? json_integer((json_int_t)strtoll(v, NULL, 10)) : json_null();
}

static int key_row(void *arg, int n, const char *const *v, const char *const *names) {
    keys_list_t *l = arg;
    (void)names;
    if (n < 6) return GPUFL_EINVAL;
    if (json_array_size(l->keys) >= KEYS_LIST_MAX) {
        l->truncated = 1;
        return 0;
    }
    json_t *o = json_object();
    if (!o) return GPUFL_ENOMEM;
    json_object_set_new(o, "prefix", json_string(v[0] ? v[0] : ""));
    json_object_set_new(
        o, "role",
        json_string(gpufl__auth_role_name((gpufl__role_t)(v[1] ? strtol(v[1], NULL, 10) : 0))));
    json_object_set_new(o, "label", v[2] ? json_string(v[2]) : json_null());
    json_object_set_new(o, "created_at", int_or_null(v[3]));
    json_object_set_new(o, "last_used_at", int_or_null(v[4]));
    json_object_set_new(o, "revoked_at", int_or_null(v[5]));
    return json_array_append_new(l->keys, o) ? GPUFL_ENOMEM : 0;
}

/* GET /api/v1/keys: the workspace's keys, newest first (never a hash). */
void gpufl__route_keys_list(gpufl__request_t *req, gpufl__reply_t *rep) {
    if (!may_manage(req, rep)) return;
    gpufl__server_t *s = req->server;
    /* Uses noted in memory reach the table first, so "last used" is current. */
    gpufl__auth_flush(s->auth);
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, req->who.workspace_id);
    const char *p[] = {ws};
    keys_list_t l = {json_array(), 0};
    int rc = l.keys ? s->ops->query(s->store,
                                    "SELECT prefix, role, label, created_at, last_used_at,"
                                    " revoked_at FROM api_keys WHERE workspace_id ="
                                    " CAST(? AS BIGINT) ORDER BY created_at DESC, id DESC",
                                    p, 1, key_row, &l)
                    : GPUFL_ENOMEM;
    if (rc) {
        json_decref(l.keys);
        gpufl__reply_error(rep, gpufl__store_status(rc), "the keys could not be read");
        return;
    }
    rep->status = 200;
    rep->json = json_pack("{s:o,s:b}", "keys", l.keys, "truncated", l.truncated);
}

/* The body of a create: {"role": "read"|"ingest"|"admin", "label": "..."?}. 0, or -1 with rep
 * set to 400. */
static int create_args(gpufl__request_t *req, gpufl__reply_t *rep, gpufl__role_t *role,
                       char label[LABEL_MAX_BYTES + 1], int *has_label) {
    json_error_t err;
    json_t *doc = json_loadb(req->body ? req->body : "", req->body_len, 0, &err);
    const char *r = json_string_value(json_object_get(doc, "role"));
    json_t *l = json_object_get(doc, "label");
    *role = r ? gpufl__auth_role_parse(r) : (gpufl__role_t)0;
    int ok = json_is_object(doc) && *role && (!l || json_is_null(l) || json_is_string(l)) &&
             (!json_is_string(l) || json_string_length(l) <= LABEL_MAX_BYTES);
    *has_label = ok && json_is_string(l) && json_string_length(l) > 0;
    if (*has_label) snprintf(label, LABEL_MAX_BYTES + 1, "%s", json_string_value(l));
    json_decref(doc);
    if (ok) return 0;
    gpufl__reply_error(rep, 400,
                       "expected {\"role\": \"read\"|\"ingest\"|\"admin\", \"label\": \"...\"} "
                       "(a label of at most 128 bytes, optional)");
    return -1;
}

/* POST /api/v1/keys: a new key of the workspace, its plaintext in this answer only. */
void gpufl__route_keys_create(gpufl__request_t *req, gpufl__reply_t *rep) {
    if (!may_manage(req, rep)) return;
    gpufl__role_t role;
    char label[LABEL_MAX_BYTES + 1];
    int has_label;
    if (create_args(req, rep, &role, label, &has_label)) return;
    if (!may_touch_role(req, role)) {
        gpufl__reply_error(rep, 403,
                           "an admin key is made with an admin key or the server's "
                           "admin command, not from a login");
        return;
    }
    gpufl__server_t *s = req->server;
    char key[GPUFL__KEY_LEN + 1], prefix[GPUFL__KEY_PREFIX_LEN + 1], id_t[32];
    uint8_t hash[32];
    int64_t id = 0;
    gpufl__auth_key_generate(key, prefix, hash);
    int rc = s->ops->key_create(s->store, &id, req->who.workspace_id, role, prefix, hash);
    if (!rc && has_label) {
        snprintf(id_t, sizeof id_t, "%" PRId64, id);
        const char *p[] = {label, id_t};
        rc = s->ops->query(s->store, "UPDATE api_keys SET label = ? WHERE id = CAST(? AS BIGINT)",
                           p, 2, NULL, NULL);
    }
    if (rc) {
        sodium_memzero(key, sizeof key);
        gpufl__reply_error(rep, gpufl__store_status(rc), "the key could not be created");
        return;
    }
    rep->status = 201;
    rep->json = json_pack("{s:s,s:s,s:s,s:s*,s:I}", "key", key, "prefix", prefix, "role",
                          gpufl__auth_role_name(role), "label", has_label ? label : NULL,
                          "created_at", (json_int_t)gpufl__store_now());
    sodium_memzero(key, sizeof key);
    fprintf(stderr, "gpufl-server: %s key %s created by %s%s\n", gpufl__auth_role_name(role),
            prefix, req->who.login_id ? "user " : "key ",
            req->who.login_id ? req->who.user : req->who.prefix);
}

static int role_row(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    if (n >= 1 && v[0]) *(long *)arg = strtol(v[0], NULL, 10);
    return 0;
}

/* POST /api/v1/keys/{prefix}/revoke: another workspace's prefix is 404, as a missing one. */
void gpufl__route_keys_revoke(gpufl__request_t *req, gpufl__reply_t *rep) {
    if (!may_manage(req, rep)) return;
    gpufl__server_t *s = req->server;
    const char *prefix = req->params[0];
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, req->who.workspace_id);
    const char *p[] = {ws, prefix};
    long role = 0;
    int rc = s->ops->query(s->store,
                           "SELECT role FROM api_keys WHERE workspace_id = CAST(? AS BIGINT) AND"
                           " prefix = ?",
                           p, 2, role_row, &role);
    if (!rc && !role) rc = GPUFL_ENOTFOUND;
    if (!rc && !may_touch_role(req, (gpufl__role_t)role)) {
        gpufl__reply_error(rep, 403,
                           "an admin key is revoked with an admin key or the server's "
                           "admin command, not from a login");
        return;
    }
    if (!rc) rc = s->ops->key_revoke(s->store, req->who.workspace_id, prefix);
    if (rc == GPUFL_ENOTFOUND) {
        gpufl__reply_error(rep, 404, "no such key in this workspace");
        return;
    }
    if (rc) {
        gpufl__reply_error(rep, gpufl__store_status(rc), "the key could not be revoked");
        return;
    }
    /* The key stops working now, not when its cached lookup expires. */
    gpufl__auth_forget(s->auth, prefix);
    rep->status = 200;
    rep->json = json_pack("{s:s,s:s}", "prefix", prefix, "state", "revoked");
    fprintf(stderr, "gpufl-server: key %s revoked by %s%s\n", prefix,
            req->who.login_id ? "user " : "key ",
            req->who.login_id ? req->who.user : req->who.prefix);
}
