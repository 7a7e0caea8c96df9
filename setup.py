"""Builds the journal's optional C lane (broker/journal/_lane.c); everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and the journal uses its pure-Python lane
(broker.journal.lane.PyLane), which costs about three times as much per journaled delivery.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "broker.journal._lane",
            sources=["broker/journal/_lane.c"],
            extra_compile_args=[
                "-O2",
                "-Wall",
                "-Wextra",
                "-Wno-unused-parameter",
                "-Wno-missing-field-initializers",
            ],
            optional=True,
        )
    ]
)
