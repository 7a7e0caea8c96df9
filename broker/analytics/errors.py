"""The one error the pipeline reports to users: a clear sentence, no Java stack trace."""


class AnalyticsError(Exception):
    """Bad input: missing paths, empty journals, schema-version mismatches, malformed definitions."""
