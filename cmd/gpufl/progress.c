// SPDX-License-Identifier: Apache-2.0
/*
 * progress.c - what the subcommands show while they work: the reading of a
 * session (with its percentage, once the load has taken 0.3 s) and the
 * stages after it, on stderr, rewritten in place, only when stderr is a
 * terminal; and the one way they load a session.
 */
#include "cli.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_AFTER_NS 300000000 /* work shorter than 0.3 s shows nothing */

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void cli_progress_start(cli_progress_t *p, const char *what) {
    memset(p, 0, sizeof *p);
    p->on = isatty(STDERR_FILENO);
    p->start_ns = now_ns();
    p->last_pct = -1;
    p->what = what;
}

static void show(cli_progress_t *p, int pct, const char *detail) {
    if (!p->on || now_ns() - p->start_ns < PROGRESS_AFTER_NS) return;
    if (p->shown && pct == p->last_pct) return;
    fprintf(stderr, "\r\033[Kgpufl: %s %3d%%%s", p->what, pct, detail);
    fflush(stderr);
    p->shown = 1;
    p->last_pct = pct;
}

void cli_progress_fraction(void *user, double fraction) { show(user, (int)(fraction * 100.0), ""); }

/* "gpufl: reading session 43% (120 MiB of 280 MiB)". */
static void on_load(void *user, uint64_t read_bytes, uint64_t total_bytes) {
    if (total_bytes == 0) return;
    char detail[64];
    snprintf(detail, sizeof detail, " (%.0f MiB of %.0f MiB)", (double)read_bytes / 1048576.0,
             (double)total_bytes / 1048576.0);
    show(user, (int)(100.0 * (double)read_bytes / (double)total_bytes), detail);
}

void cli_progress_clear(cli_progress_t *p) {
    if (p->shown) fputs("\r\033[K", stderr);
    p->shown = 0;
    p->last_pct = -1;
}

int cli_load_session(const char *dir, gpufl_analysis_t **a) {
    cli_progress_t p;
    cli_progress_start(&p, "reading session");
    gpufl_open_options_t opts;
    gpufl_open_options_init(&opts);
    if (p.on) {
        opts.progress = on_load;
        opts.progress_user = &p;
    }
    int rc = gpufl_analysis_open_with(a, dir, &opts);
    cli_progress_clear(&p);
    if (rc != 0) {
        fprintf(stderr, "gpufl: cannot read '%s': %s\n", dir, gpufl_last_error());
        return CLI_FAILED;
    }
    return CLI_OK;
}
