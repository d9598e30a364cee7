// SPDX-License-Identifier: Apache-2.0
/*
 * report_md.c - the report as Markdown (GitHub flavour): a heading per
 * section, "label: value" lists and GitHub tables, through report_doc.c.
 * Every log string is escaped, so a kernel name with '<', '|' or '*' reads
 * as written and never breaks a table or turns into HTML.
 */
#include "analysis/report.h"

#include <string.h>

static void md_text(FILE *out, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '\n':
        case '\r':
        case '\t': fputc(' ', out); break;
        case '\\':
        case '`':
        case '*':
        case '_':
        case '[':
        case ']':
        case '|':
        case '#':
        case '~': fputc('\\', out), fputc(c, out); break;
        default:
            if (c >= 0x20) fputc(c, out);
        }
    }
}

static void md_heading(FILE *out, int level, const char *text) {
    for (int i = 0; i < level; i++) fputc('#', out);
    fputc(' ', out);
    md_text(out, text);
    fputs("\n\n", out);
}

static void md_para(FILE *out, const char *text) {
    md_text(out, text);
    fputs("\n\n", out);
}

static void md_fields_begin(FILE *out) { (void)out; }

static void md_field(FILE *out, const char *label, const char *value) {
    if (*label) {
        fputs("- **", out);
        md_text(out, label);
        fputs("**: ", out);
    } else {
        fputs("  - ", out);
    }
    md_text(out, value);
    fputc('\n', out);
}

static void md_fields_end(FILE *out) { fputc('\n', out); }

static void md_table_begin(FILE *out, size_t cols, const char *const *heads, const char *aligns) {
    fputc('|', out);
    for (size_t i = 0; i < cols; i++) {
        fputc(' ', out);
        md_text(out, heads[i]);
        fputs(" |", out);
    }
    fputs("\n|", out);
    for (size_t i = 0; i < cols; i++) fputs(aligns[i] == 'r' ? "---:|" : "---|", out);
    fputc('\n', out);
}

static void md_row(FILE *out, size_t cols, const char *const *cells) {
    fputc('|', out);
    for (size_t i = 0; i < cols; i++) {
        fputc(' ', out);
        md_text(out, cells[i]);
        fputs(" |", out);
    }
    fputc('\n', out);
}

static void md_table_end(FILE *out) { fputc('\n', out); }

int gpufl__report_render_markdown(const gpufl__report_t *r, FILE *out) {
    const gpufl__report_emitter_t e = {out,         md_heading,    md_para,        md_fields_begin,
                                       md_field,    md_fields_end, md_table_begin, md_row,
                                       md_table_end};
    fputs("# gpufl report: ", out);
    md_text(out, r->summary.app);
    fputs("\n\n", out);
    int rc = gpufl__report_doc_head(&e, r);
    if (!rc) rc = gpufl__report_doc_body(&e, r);
    return rc;
}
