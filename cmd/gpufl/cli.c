// SPDX-License-Identifier: Apache-2.0
/*
 * cli.c - the gpufl command-line tool: one subcommand per file, dispatched
 * here (gpufl__cli_main, run by the executable and by `python -m gpufl`).
 * This file holds the command table, the usage texts, the exit codes and the
 * few helpers every subcommand uses (colour, usage errors).
 */
#include "cli.h"
#include "cli_main.h"

#include <gpufl/gpufl.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage; /* after "usage: gpufl " */
    int names_session; /* takes DIR, SESSION and --session: session_text follows the usage */
} cli_command_t;

static const cli_command_t commands[] = {
    {"report", cli_report, "print the report of a session (text, json, markdown, html)",
     "report [--format text|json|markdown|html] [--output FILE] [--session ID]\n"
     "             [DIR [SESSION] | SESSION]\n"
     "\n"
     "Prints the report of a session. --output FILE (-o FILE) writes it to FILE\n"
     "instead of stdout. --format (-f): text (the default), json (one document,\n"
     "docs/report-json.md), markdown, or html (one self-contained file with a\n"
     "timeline and metric plots). On a terminal, a load that takes more than 0.3 s\n"
     "shows its progress on stderr.\n",
     1},
    {"sessions", cli_sessions, "list the sessions under a log root, newest first",
     "sessions [ROOT]\n"
     "\n"
     "Lists the session directories under ROOT (default: the log root), newest first:\n"
     "session id, start time (UTC), app name, duration (\"running or died\" when the\n"
     "session has no session_end record) and size of its files.\n",
     0},
    {"info", cli_info, "what this machine has: driver, NVML, CUPTI, libcuda, engines",
     "info\n"
     "\n"
     "Loads NVML, CUPTI and libcuda as a session would and says what each gives\n"
     "(GPUs, versions) or why it cannot load, then which engines can run here.\n",
     0},
    {"insights", cli_insights, "findings from a session: sync lines, occupancy, idle GPU, ...",
     "insights [--format text|json] [--min-severity LOW|MEDIUM|HIGH] [--output FILE]\n"
     "               [--session ID] [DIR [SESSION] | SESSION]\n"
     "\n"
     "Runs the insight rules (docs/insights.md) on a session and prints each finding:\n"
     "severity, category, title, the source line it is about, what was found, what to\n"
     "do and the numbers it rests on; then the rules the session lacks data for, and\n"
     "why. --format json writes one JSON document; --min-severity hides lower\n"
     "findings; --output FILE (-o FILE) writes to FILE instead of stdout.\n",
     1},
    {"export", cli_export, "a session as a trace for Perfetto UI, chrome://tracing or babeltrace2",
     "export --format perfetto|chrome|ctf [--output FILE|DIR] [--max-events N] [--force]\n"
     "             [--session ID] [DIR [SESSION] | SESSION]\n"
     "\n"
     "Writes the timeline of a session as a trace: CPU threads with their scopes,\n"
     "synchronization calls and kernel launches, one track per GPU stream, arrows\n"
     "from each launch to its kernel, and counters (GPU utilization, memory, power,\n"
     "clocks, temperature; host CPU and RSS).\n"
     "--format (-f) perfetto: Perfetto's protobuf trace, for ui.perfetto.dev;\n"
     "         chrome: Chrome trace event JSON, for chrome://tracing and Perfetto UI;\n"
     "         ctf: a CTF 1.8 trace directory, for babeltrace2 and Trace Compass.\n"
     "--output FILE (-o FILE): default <session-id>.perfetto-trace,\n"
     "<session-id>.trace.json or (a directory) <session-id>.ctf in the current\n"
     "directory; - writes to stdout (not ctf).\n"
     "--max-events N (chrome): at most N events per file (default 1000000, 0: no\n"
     "limit); a larger session is split by time into FILE stem.1.trace.json, ...\n"
     "--force (ctf): replace the CTF trace in a directory that is not empty (a\n"
     "directory holding anything else is refused).\n"
     "The files written are listed on stdout (ctf: the directory). See docs/export.md.\n",
     1},
    {"upload", cli_upload, "send finished sessions to gpufl-server, each window once",
     "upload [--server URL] [--api-key-file FILE] [--all] [--tails] [--budget-s N]\n"
     "       [SESSION | DIR]\n"
     "\n"
     "Sends the sealed windows of a session (the latest under the log root by default;\n"
     "DIR may be a session directory or a log root, --all takes every session of the\n"
     "root) to gpufl-server (docs/protocol.md). --tails also sends the windows still\n"
     "open (a running session, or one that died) up to their last complete line; the\n"
     "rest follows later. --server defaults to $GPUFL_BACKEND_URL,\n"
     "the key to the first line of --api-key-file, else $GPUFL_API_KEY. What the server\n"
     "acknowledged is kept in the root's .gpufl-upload.json, shared with the library's\n"
     "upload and gpufl-agent: nothing is sent twice, and a session already delivered is\n"
     "said to be. Network errors, 408, 429 and 5xx are retried with backoff for at most\n"
     "--budget-s seconds (default 300). Exit 0: everything sealed is on the server;\n"
     "1: part of it; 2: nothing could be sent (or a usage error).\n",
     0},
    {"trace", cli_trace, "run a program under gpufl, unchanged (CUDA injection)",
     "trace [--engine E] [--output DIR] [--stacks] [--app-name NAME]\n"
     "             [--flight-recorder N] [--force] -- PROGRAM [ARGS...]\n"
     "\n"
     "Runs PROGRAM with gpufl injected through CUDA (CUDA_INJECTION64_PATH names\n"
     "libgpufl_inject.so): every process of it that initializes CUDA records a session\n"
     "of its own, all under one directory and marked with one run id. The program's\n"
     "stdin, stdout and stderr are its own; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to\n"
     "gpufl go on to it. At the end, stderr lists the sessions and the report command.\n"
     "--engine (-e) E: the profiling engine (default Trace; Monitor, PcSampling, ...).\n"
     "--output (-o) DIR: where the sessions go (default: a new ./gpufl-trace-<time>).\n"
     "--stacks: CPU call stacks at launches and syncs (enable_stack_trace).\n"
     "--app-name NAME: the sessions' app name (default: PROGRAM's file name).\n"
     "--flight-recorder N: keep the last N seconds in memory, written only on a\n"
     "snapshot (flight_recorder_s; docs/options.md).\n"
     "--force: run even though CUDA_INJECTION64_PATH names another tool's library\n"
     "(which gpufl's then replaces); without it that is refused with exit 2.\n"
     "GPUFL_* variables already set pass through to the program; the flags win.\n"
     "$GPUFL_INJECT_LIBRARY overrides where libgpufl_inject.so is found. See\n"
     "docs/trace.md.\n"
     "\n"
     "Exit status: the program's own (128+N when signal N killed it; 127 when it\n"
     "could not be found, 126 when it could not be run), 1 or 2 from gpufl itself\n"
     "before the program started.\n",
     0},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

/* Code 3 once meant "not built yet"; it is retired, never reused. */
static const char exit_codes[] = "exit codes:\n"
                                 "  0  done\n"
                                 "  1  runtime failure (no such session, unreadable log, ...)\n"
                                 "  2  usage error (unknown subcommand, bad option)\n";

static const char session_text[] =
    "\n"
    "The session: DIR is a session directory, or a log root holding sessions: then\n"
    "its latest session, or the one SESSION (a session id) or --session ID names.\n"
    "SESSION alone is a session id under the log root; neither DIR nor SESSION: the\n"
    "latest session under the log root. `gpufl sessions [ROOT]` lists them.\n";

static const char log_root_text[] =
    "log root: $GPUFL_LOG_PATH, else $GPUFL_APP_NAME.log, else gpufl.log (in the\n"
    "current directory), as the library picks log_path when none is set in code.\n"
    "Colour only on a terminal, and never when NO_COLOR is set.\n";

static const cli_command_t *find_command(const char *name) {
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

void cli_print_usage(const char *cmd, FILE *out) {
    const cli_command_t *c = cmd && *cmd ? find_command(cmd) : NULL;
    if (c) {
        fprintf(out, "usage: gpufl %s", c->usage);
        if (c->names_session) fprintf(out, "%s\n%s", session_text, log_root_text);
        fprintf(out, "\n%s", exit_codes);
        return;
    }
    fprintf(out,
            "usage: gpufl <command> [options] [arguments]\n"
            "       gpufl --help | help [command] | --version\n\n"
            "%scommands:%s\n",
            cli_bold(out), cli_reset(out));
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`gpufl <command> --help` shows the options of one command.\n\n%s\n%s",
            log_root_text, exit_codes);
}

int cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fputs("gpufl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nsee gpufl %s%s--help\n", cmd ? cmd : "", cmd && *cmd ? " " : "");
    return CLI_USAGE;
}

static int colour_on(FILE *out) {
    const char *no = getenv("NO_COLOR");
    return (no == NULL || *no == '\0') && isatty(fileno(out));
}
const char *cli_bold(FILE *out) { return colour_on(out) ? "\033[1m" : ""; }
const char *cli_reset(FILE *out) { return colour_on(out) ? "\033[0m" : ""; }

int gpufl__cli_main(int argc, char **argv) {
    if (argc < 2) return cli_usage_error("", "no command given");
    const char *cmd = argv[1];
    if (cli_is_help(cmd)) {
        cli_print_usage("", stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        if (argc > 2) return cli_usage_error("", "%s takes no argument", cmd);
        printf("gpufl %s\n", gpufl_version());
        return CLI_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc > 3) return cli_usage_error("", "help takes at most one command");
        if (argc == 3 && !find_command(argv[2]))
            return cli_usage_error("", "unknown command '%s'", argv[2]);
        cli_print_usage(argc == 3 ? argv[2] : "", stdout);
        return CLI_OK;
    }
    const cli_command_t *c = find_command(cmd);
    if (!c) {
        if (cmd[0] == '-') return cli_usage_error("", "unknown option '%s'", cmd);
        return cli_usage_error("", "unknown command '%s'", cmd);
    }
    return c->run(argc - 1, argv + 1);
}
