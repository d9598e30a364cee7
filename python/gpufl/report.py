# SPDX-License-Identifier: Apache-2.0
"""gpufl.report: the report of a recorded session, as text (or JSON,
Markdown, HTML), rendered by libgpufl's report: the same bytes
`gpufl report` writes for the session.

    from gpufl.report import generate_report, TextReport
    text = generate_report("./logs", log_prefix="my_app", top_n=10)
    TextReport(GpuFlightSession("./logs", log_prefix="my_app")).save("report.txt")
"""
import sys

from .analyzer import GpuFlightSession

__all__ = ["generate_report", "TextReport"]


class TextReport:
    """The text report of a GpuFlightSession, top_n kernel names in the
    hotspots and kernel details (gpufl report lists 10)."""

    def __init__(self, session, top_n=10):
        if not isinstance(session, GpuFlightSession):
            raise TypeError("session must be a GpuFlightSession, not %s"
                            % type(session).__name__)
        self.session = session
        self.top_n = top_n
        self.generate()  # a bad top_n fails here, not at the first use

    def generate(self):
        """The report as a str."""
        return self.session.report("text", self.top_n)

    def print(self, file=None):
        """Writes the report to file (default sys.stdout)."""
        (file or sys.stdout).write(self.generate())

    def save(self, path):
        """Writes the report to the file at path (UTF-8), replacing it."""
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(self.generate())


def generate_report(log_dir, log_prefix=None, top_n=10, output_path=None, session_id=None,
                    format="text"):
    """The report of the session GpuFlightSession(log_dir, log_prefix,
    session_id) finds, in format text, json, markdown or html; also written
    to output_path when given. Returns it as a str."""
    session = GpuFlightSession(log_dir, log_prefix=log_prefix, session_id=session_id)
    text = session.report(format, top_n)
    if output_path:
        with open(output_path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return text
