"""Build hook for the optional C speedups of segment_lib (everything else is in pyproject.toml).

The extension is optional: if no C compiler is present the pure-Python decoder is used, with
identical results (tests compare the two).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "segment_lib._speedups",
            sources=["segment_lib/_speedups.c"],
            optional=True,
        ),
        # the one-pass batch summary the catalog build uses (segment_lib/_summary.c)
        Extension(
            "segment_lib._summary",
            sources=["segment_lib/_summary.c"],
            optional=True,
        ),
    ]
)
