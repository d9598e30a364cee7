// SPDX-License-Identifier: Apache-2.0
/*
 * jsonw.c - JSON encoding into capped buffers for the log writer.
 */
#include "util/jsonw.h"

#include <stdlib.h>
#include <string.h>

void gpufl__buf_init(gpufl__buf_t *b, size_t max_bytes) {
    memset(b, 0, sizeof *b);
    b->max = max_bytes;
}

void gpufl__buf_fini(gpufl__buf_t *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

int gpufl__buf_reserve(gpufl__buf_t *b, size_t n) {
    if (b->len + n > b->max) { /* the cap holds even where memory was already allocated */
        b->overflow = 1;
        return -1;
    }
    if (b->len + n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    if (cap > b->max) cap = b->max;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->overflow = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void gpufl__buf_put(gpufl__buf_t *b, const char *s, size_t n) {
    if (gpufl__buf_reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

void gpufl__buf_puts(gpufl__buf_t *b, const char *s) { gpufl__buf_put(b, s, strlen(s)); }

void gpufl__buf_putc(gpufl__buf_t *b, char c) {
    if (gpufl__buf_reserve(b, 1)) return;
    b->data[b->len++] = c;
}

char *gpufl__fmt_i64(char *p, int64_t v) {
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "6263646566676869707172737475767778798081828384858687888990919293"
                                "949596979899";
    char tmp[20];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) *p++ = '-';
    while (u >= 100) { /* two digits per division */
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        tmp[sizeof tmp - 1 - n++] = pairs[d + 1];
        tmp[sizeof tmp - 1 - n++] = pairs[d];
    }
    if (u >= 10) {
        tmp[sizeof tmp - 1 - n++] = pairs[u * 2 + 1];
        tmp[sizeof tmp - 1 - n++] = pairs[u * 2];
    } else {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u);
    }
    memcpy(p, tmp + sizeof tmp - n, (size_t)n);
    return p + n;
}

void gpufl__buf_put_i64(gpufl__buf_t *b, int64_t v) {
    if (gpufl__buf_reserve(b, 21)) return;
    b->len = (size_t)(gpufl__fmt_i64(b->data + b->len, v) - b->data);
}

void gpufl__buf_put_fixed(gpufl__buf_t *b, double v, int decimals) {
    static const int64_t scale[] = {1, 10, 100, 1000};
    if (decimals < 1) decimals = 1;
    if (decimals > 3) decimals = 3;
    if (!(v >= 0) || v > 1e12) { /* negative, NaN or absurd: unknown */
        gpufl__buf_put(b, "null", 4);
        return;
    }
    int64_t units = (int64_t)(v * (double)scale[decimals] + 0.5);
    char frac[4];
    gpufl__buf_put_i64(b, units / scale[decimals]);
    gpufl__buf_putc(b, '.');
    for (int i = decimals - 1; i >= 0; i--, units /= 10) frac[i] = (char)('0' + units % 10);
    gpufl__buf_put(b, frac, (size_t)decimals);
}

size_t gpufl__utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

void gpufl__buf_put_str(gpufl__buf_t *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    /* Worst case: every byte becomes \u00XX or U+FFFD (6 bytes). */
    if (gpufl__buf_reserve(b, n * 6 + 2)) return;
    char *o = b->data + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *o++ = (char)c;
            i++;
        } else if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
            i++;
        } else if (c < 0x20) {
            *o++ = '\\';
            switch (c) {
            case '\n': *o++ = 'n'; break;
            case '\t': *o++ = 't'; break;
            case '\r': *o++ = 'r'; break;
            default:
                memcpy(o, "u00", 3);
                o += 3;
                *o++ = hex[c >> 4];
                *o++ = hex[c & 15];
            }
            i++;
        } else {
            size_t len = gpufl__utf8_seq(p + i, n - i);
            if (len) {
                memcpy(o, p + i, len);
                o += len;
                i += len;
            } else {
                memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD for each invalid byte */
                o += 3;
                i++;
            }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
}

void gpufl__buf_key(gpufl__buf_t *b, const char *key) {
    if (b->len > 0 && b->data[b->len - 1] != '{' && b->data[b->len - 1] != '[')
        gpufl__buf_putc(b, ',');
    gpufl__buf_put_str(b, key, strlen(key));
    gpufl__buf_putc(b, ':');
}

void gpufl__buf_record(gpufl__buf_t *b, const char *type) { gpufl__buf_record_v(b, type, 1); }

void gpufl__buf_record_v(gpufl__buf_t *b, const char *type, int version) {
    gpufl__buf_puts(b, "{\"type\":");
    gpufl__buf_put_str(b, type, strlen(type));
    gpufl__buf_puts(b, ",\"v\":");
    gpufl__buf_put_i64(b, version);
}

void gpufl__buf_kv_i64(gpufl__buf_t *b, const char *key, int64_t v) {
    gpufl__buf_key(b, key);
    gpufl__buf_put_i64(b, v);
}

void gpufl__buf_kv_str(gpufl__buf_t *b, const char *key, const char *s) {
    gpufl__buf_key(b, key);
    gpufl__buf_put_str(b, s, strlen(s));
}

void gpufl__buf_kv_opt(gpufl__buf_t *b, const char *key, int64_t v) {
    gpufl__buf_key(b, key);
    if (v < 0)
        gpufl__buf_put(b, "null", 4);
    else
        gpufl__buf_put_i64(b, v);
}
