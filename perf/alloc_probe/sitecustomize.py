"""Imported at start-up by a broker that perf/turn_audit.py runs (this directory and the probe's build
directory are put on its PYTHONPATH): installs the counting allocator of ``_allocprobe.c`` into the file
$ALLOCPROBE_OUT, which turn_audit reads before and after a scenario, and at exit writes the sampled
allocation sites (turn_audit ``--where``) to $ALLOCPROBE_OUT.sites."""

import atexit
import importlib
import os

_OUT = os.environ.get("ALLOCPROBE_OUT")
if _OUT:
    # Built by turn_audit for the interpreter that runs the broker; no stub for mypy to read.
    _probe = importlib.import_module("_allocprobe")
    _probe.install(_OUT)
    atexit.register(_probe.dump, _OUT + ".sites")
