// SPDX-License-Identifier: Apache-2.0
/*
 * mon_metrics_tool.c - prints gpufl-monitor's series table as docs/metrics.md
 * holds it (--doc), or a synthetic snapshot rendered (--render full|host
 * [--openmetrics] [--dcgm]), for tests/tools/check_metrics_doc.py and the
 * promtool check. A test helper: not installed.
 */
#include "exposition.h"
#include "mon_fixture.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    mon_buf_t b = {0};
    int rc;
    if (argc == 2 && strcmp(argv[1], "--doc") == 0) {
        rc = mon_metrics_doc(&b);
    } else if (argc >= 3 && strcmp(argv[1], "--render") == 0) {
        int om = 0, dcgm = 0;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--openmetrics") == 0)
                om = 1;
            else if (strcmp(argv[i], "--dcgm") == 0)
                dcgm = 1;
            else {
                fprintf(stderr, "mon_metrics_tool: unknown option %s\n", argv[i]);
                return 2;
            }
        }
        mon_snapshot_t *s;
        if (strcmp(argv[2], "full") == 0)
            s = mf_snapshot_8();
        else if (strcmp(argv[2], "host") == 0)
            s = mf_snapshot_host_only();
        else {
            fprintf(stderr, "mon_metrics_tool: --render full|host, not %s\n", argv[2]);
            return 2;
        }
        rc = mon_render_metrics(&b, s, om, dcgm);
        free(s);
    } else {
        fprintf(stderr, "usage: mon_metrics_tool --doc | --render full|host [--openmetrics] "
                        "[--dcgm]\n");
        return 2;
    }
    if (rc == 0 && b.data) fwrite(b.data, 1, b.len, stdout);
    mon_buf_free(&b);
    return rc == 0 ? 0 : 1;
}
