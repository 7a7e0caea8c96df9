"""JVM options for the short-lived JVMs the suites start (Spark's drivers, executors and daemons, Maven,
javac and the client matrix's Java programs), which run for seconds on small inputs.

HotSpot's defaults are tuned for long-running servers: the C2 compiler threads recompile hot code a second
time, and G1 runs parallel GC threads, CPU that a run of a few seconds never earns back. On the 2-core CI
machine that CPU is taken from the other xdist worker. C1 alone (``TieredStopAtLevel=1``) and the serial
collector halve the CPU of a local Spark job on the test journal (``warrenmq analytics ttd``: 25 s of CPU
to 12 s, wall 26 s to 14 s; docs/testing.md has the suite figures). ``-Xshare:auto`` keeps the JDK's class
data sharing archive in use (the default, said so that a JVM option set elsewhere cannot turn it off).

Nothing a test checks depends on them: they change how fast code is compiled and memory collected, not what
it does. Benchmarks never take them.
"""

from __future__ import annotations

SHORT_RUN_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"
