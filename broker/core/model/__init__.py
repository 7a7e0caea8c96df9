"""The small value types every part of the core shares (message, envelope, clock, names, profile,
arguments, statistics, event values); imports nothing else of the core."""
