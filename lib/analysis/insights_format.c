// SPDX-License-Identifier: Apache-2.0
/*
 * insights_format.c - insights as text for people and as JSON for tools
 * (`gpufl insights`, and the report's insights section).
 */
#include "analysis/insights.h"
#include "analysis/report.h"

#include "util/error.h"

#include <jansson.h>

#include <string.h>

static size_t shown(const gpufl__insights_t *in, gpufl_severity_t min) {
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++) n += in->items[i].severity >= min;
    return n;
}

/* "file:line in function" (or the parts known), "" when none. */
static void place(const gpufl__insight_t *x, char *buf, size_t size) {
    buf[0] = '\0';
    if (x->file && x->line > 0)
        snprintf(buf, size, "%s:%lld", x->file, (long long)x->line);
    else if (x->file)
        snprintf(buf, size, "%s", x->file);
    if (x->function) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, "%sin %s", n ? " " : "", x->function);
    }
}

int gpufl__insights_write_text(const gpufl__insights_t *in, gpufl_severity_t min,
                               const char *indent, FILE *out) {
    const char *p = indent ? indent : "";
    if (shown(in, min) == 0)
        fprintf(out, "%sNo findings%s.\n", p, min > GPUFL_SEVERITY_LOW ? " at this severity" : "");
    for (size_t i = 0, k = 0; i < in->n; i++) {
        const gpufl__insight_t *x = &in->items[i];
        if (x->severity < min) continue;
        fprintf(out, "%s%s[%s] %s: %s\n", k++ ? "\n" : "", p, gpufl_severity_name(x->severity),
                x->category, x->title ? x->title : x->rule);
        char where[1024];
        place(x, where, sizeof where);
        if (*where) fprintf(out, "%s  at %s\n", p, where);
        if (x->source) fprintf(out, "%s  | %s\n", p, x->source);
        if (x->kernel) fprintf(out, "%s  kernel: %s\n", p, x->kernel);
        if (x->message) fprintf(out, "%s  %s\n", p, x->message);
        if (x->advice) fprintf(out, "%s  advice: %s\n", p, x->advice);
        if (x->n_evidence) {
            fprintf(out, "%s  evidence:", p);
            for (size_t e = 0; e < x->n_evidence; e++) {
                char v[48];
                gpufl__report_fmt_evidence(v, sizeof v, x->evidence[e].value, x->evidence[e].unit);
                fprintf(out, "%s %s %s", e ? "," : "", x->evidence[e].name, v);
            }
            fputc('\n', out);
        }
    }
    if (in->n_skipped) {
        fprintf(out, "\n%sNot judged (the session lacks what these rules need):\n", p);
        for (size_t i = 0; i < in->n_skipped; i++)
            fprintf(out, "%s  %s: %s\n", p, in->skipped[i].rule, in->skipped[i].why);
    }
    return ferror(out) ? gpufl__set_error(GPUFL_EIO, "cannot write the insights") : 0;
}

/* obj[key] = a string, or nothing when s is NULL. */
static int put_str(json_t *obj, const char *key, const char *s) {
    return s ? json_object_set_new(obj, key, json_string(s)) : 0;
}

static json_t *insight_json(const gpufl__insight_t *x) {
    json_t *o = json_object();
    json_t *ev = json_array();
    if (o == NULL || ev == NULL) {
        json_decref(o);
        json_decref(ev);
        return NULL;
    }
    int rc = put_str(o, "rule", x->rule) | put_str(o, "category", x->category) |
             put_str(o, "severity", gpufl_severity_name(x->severity)) |
             put_str(o, "title", x->title) | put_str(o, "message", x->message) |
             put_str(o, "advice", x->advice) | put_str(o, "file", x->file) |
             (x->line > 0 ? json_object_set_new(o, "line", json_integer(x->line)) : 0) |
             put_str(o, "function", x->function) | put_str(o, "source", x->source) |
             put_str(o, "kernel", x->kernel);
    for (size_t e = 0; e < x->n_evidence; e++) {
        json_t *item = json_object();
        if (item == NULL) {
            rc = -1;
            break;
        }
        rc |= put_str(item, "name", x->evidence[e].name) |
              json_object_set_new(item, "value", json_real(x->evidence[e].value)) |
              put_str(item, "unit", x->evidence[e].unit) | json_array_append_new(ev, item);
    }
    rc |= json_object_set_new(o, "evidence", ev);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int gpufl__insights_write_json(const gpufl__insights_t *in, gpufl_severity_t min, FILE *out) {
    json_t *doc = json_object(), *items = json_array(), *skipped = json_array();
    int rc = doc == NULL || items == NULL || skipped == NULL;
    for (size_t i = 0; !rc && i < in->n; i++) {
        if (in->items[i].severity < min) continue;
        json_t *x = insight_json(&in->items[i]);
        rc = x == NULL || json_array_append_new(items, x);
    }
    for (size_t i = 0; !rc && i < in->n_skipped; i++) {
        json_t *s = json_object();
        rc = s == NULL || put_str(s, "rule", in->skipped[i].rule) ||
             put_str(s, "why", in->skipped[i].why) || json_array_append_new(skipped, s);
    }
    if (!rc)
        rc = put_str(doc, "format", "gpufl-insights") ||
             json_object_set_new(doc, "version", json_integer(1)) ||
             json_object_set(doc, "insights", items) || json_object_set(doc, "skipped", skipped);
    json_decref(items);
    json_decref(skipped);
    if (rc) {
        json_decref(doc);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the insights document");
    }
    rc = json_dumpf(doc, out, JSON_PRESERVE_ORDER | JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(doc);
    fputc('\n', out);
    return rc || ferror(out) ? gpufl__set_error(GPUFL_EIO, "cannot write the insights") : 0;
}
