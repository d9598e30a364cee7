# SPDX-License-Identifier: Apache-2.0
"""Fixtures and log readers shared by the tests of the gpufl Python package.

Every test starts with no GPUFL_* variable from the caller's environment and
ends with gpufl.shutdown(), so that the one session a process can hold never
leaks from one test into the next. Sessions are read back from disk, through
SessionLogs, which resolves interned names the way docs/log-format.md says.
"""
import json
import os

import pytest

import gpufl


@pytest.fixture(autouse=True)
def clean_state(monkeypatch):
    for name in list(os.environ):
        if name.startswith("GPUFL_"):
            monkeypatch.delenv(name)
    gpufl.shutdown()
    yield
    gpufl.shutdown()


@pytest.fixture
def log_dir(tmp_path):
    """Where this test's sessions go: tmp_path/logs (not yet created)."""
    return tmp_path / "logs"


def only_session(log_dir):
    """The directory of the one session under log_dir (the upload's cursor and lock, hidden
    files of the log root, are not sessions)."""
    sessions = sorted(n for n in os.listdir(log_dir) if not n.startswith("."))
    assert len(sessions) == 1, sessions
    return os.path.join(log_dir, sessions[0])


class SessionLogs:
    """The lines of one session directory, by file and record type."""

    def __init__(self, directory):
        self.directory = str(directory)
        self.lines = {}
        self.names = {0: None}
        for file in ("device", "scope", "system"):
            with open(os.path.join(self.directory, file + ".log"), encoding="utf-8") as f:
                self.lines[file] = [json.loads(line) for line in f]
            for rec in self.lines[file]:
                if rec["type"] == "dict":
                    self.names.update(zip(rec["id"], rec["str"]))

    def records(self, file, type_):
        return [r for r in self.lines[file] if r["type"] == type_]

    def record(self, file, type_):
        found = self.records(file, type_)
        assert len(found) == 1, (type_, found)
        return found[0]

    def rows(self, file, type_):
        """Batch lines of one type as a list of dicts, one per row."""
        rows = []
        for batch in self.records(file, type_):
            columns = [k for k in batch if k not in ("type", "v")]
            for i in range(len(batch[columns[0]])):
                rows.append({c: batch[c][i] for c in columns})
        return rows

    def scopes(self):
        """Every scope_begin row with its names resolved and its matching
        scope_end row (None while open) under "end"."""
        ends = {row["id"]: row for row in self.rows("scope", "scope_end")}
        scopes = []
        for row in self.rows("scope", "scope_begin"):
            for column in ("name", "tag", "path"):
                row[column] = self.names[row[column]]
            row["end"] = ends.get(row["id"])
            scopes.append(row)
        return scopes

    def option(self, name):
        return self.record("device", "options")[name]
