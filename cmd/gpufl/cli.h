// SPDX-License-Identifier: Apache-2.0
/*
 * cli.h - what the subcommands of the gpufl command-line tool share: exit
 * codes, the log root the library writes to, the session list, colour.
 *
 * Each subcommand lives in its own file and is called with argv starting at
 * its own name. Messages go to stderr as one line "gpufl: ...".
 */
#ifndef GPUFL_CLI_H
#define GPUFL_CLI_H

#include <gpufl/gpufl_analysis.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes, documented in `gpufl --help` and docs/cli.md; never renumbered
 * (3, once "not built yet", is retired and not reused). */
#define CLI_OK     0 /* done */
#define CLI_FAILED 1 /* runtime failure: no such session, unreadable log, ... */
#define CLI_USAGE  2 /* bad subcommand or option */

#define CLI_PATH_MAX 4096

/* The directory sessions are written to when no root is given, as the library
 * picks it: $GPUFL_LOG_PATH, else $GPUFL_APP_NAME.log, else gpufl.log (the
 * default app_name), relative to the current directory. */
const char *cli_default_root(char *buf, size_t size);

/* 1 when dir holds a session (a device.log or scope.log), else 0. */
int cli_is_session_dir(const char *dir);

/* Lists the sessions under root, newest first, into *out (the caller
 * destroys it). Returns 0, or CLI_FAILED after printing why. */
int cli_sessions_list(const char *root, gpufl_session_list_t **out);

/* The session a command works on, as the user named it: up to two
 * arguments (DIR [SESSION] or SESSION) and --session ID. */
typedef struct cli_target {
    const char *args[2];
    int n_args;
    const char *session; /* --session ID; NULL when not given */
} cli_target_t;

/* Takes argv[*i] into t when it names the session: --session ID,
 * --session=ID or an argument (advancing *i past a separate value). Any
 * other option, a third argument or a session named twice is a usage error
 * of cmd. Returns CLI_OK, or CLI_USAGE after printing the error. */
int cli_target_arg(const char *cmd, int argc, char **argv, int *i, cli_target_t *t);

/* Sets dir to the session t names: DIR, a session directory or a log root
 * (then its latest session, or the one SESSION or --session names); SESSION
 * alone, a session id under the default root; nothing, the latest session
 * there. Sessions match as in gpufl_analysis_find(). Returns CLI_OK, or
 * CLI_FAILED after printing why. */
int cli_resolve_session(const cli_target_t *t, char *dir, size_t size);

/* Progress on stderr while a subcommand works (progress.c): shown only when
 * stderr is a terminal and the work has taken 0.3 s, rewritten in place,
 * cleared at the end. */
typedef struct cli_progress {
    int on;       /* stderr is a terminal */
    int shown;    /* a line is on screen */
    int last_pct; /* the percentage shown */
    int64_t start_ns;
    const char *what; /* "reading session", "exporting", ... */
} cli_progress_t;
void cli_progress_start(cli_progress_t *p, const char *what);
/* The fraction done (0..1); user is a cli_progress_t. */
void cli_progress_fraction(void *user, double fraction);
void cli_progress_clear(cli_progress_t *p);

/* Opens the session in dir into *a, showing the reading's progress; prints
 * why on failure. Returns CLI_OK or CLI_FAILED. */
int cli_load_session(const char *dir, gpufl_analysis_t **a);

/* Option helpers: 1 when arg is -h or --help. */
int cli_is_help(const char *arg);
/* Prints "gpufl: <message>" and "see gpufl <cmd> --help" to stderr (cmd ""
 * for the tool); returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the usage of cmd ("" for the tool) to out. */
void cli_print_usage(const char *cmd, FILE *out);

/* Bold text when out is a terminal and NO_COLOR is unset; "" otherwise. */
const char *cli_bold(FILE *out);
const char *cli_reset(FILE *out);

int cli_report(int argc, char **argv);
int cli_sessions(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_insights(int argc, char **argv);
int cli_upload(int argc, char **argv);
int cli_trace(int argc, char **argv);

#endif
