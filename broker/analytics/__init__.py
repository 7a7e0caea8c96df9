"""PySpark analytics over the broker's event journal: TTD, throughput, fan-out, route replay and a report.

Never imported by the broker (import-linter contract); `warrenmq analytics …` loads it lazily, and
`spark-submit broker/analytics/__main__.py …` runs the same jobs on a cluster. Needs the `analytics` extra.
"""
