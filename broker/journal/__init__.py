"""The event journal (outer ring): message fates and topology changes, batched to rotating files.

Off by default; `warrenmq serve --journal-dir DIR` turns it on. Only broker.server and broker.cli import this
package (import-linter contract); broker.analytics reads the files it writes.
"""
