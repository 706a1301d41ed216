"""Build hook for the optional C speedups of segment_lib (everything else is in pyproject.toml).

The extension is optional: if no C compiler is present the pure-Python decoder is used, with
identical results (tests compare the two).
"""

from setuptools import Extension, setup

# the C headers both extensions include (shared CRC-32C kernels; the magic-2 batch layout):
# a change to one rebuilds both
_SHARED_HEADERS = ["segment_lib/_crc32c.h", "segment_lib/_batch_v2.h"]

setup(
    ext_modules=[
        Extension(
            "segment_lib._speedups",
            sources=["segment_lib/_speedups.c"],
            depends=_SHARED_HEADERS,
            optional=True,
        ),
        # the one-pass batch summary the catalog build uses (segment_lib/_summary.c)
        Extension(
            "segment_lib._summary",
            sources=["segment_lib/_summary.c"],
            depends=_SHARED_HEADERS,
            optional=True,
        ),
        # magic-2 records decoded into Arrow-layout column buffers (the Parquet export's
        # decoder: segment_lib/_columns.c)
        Extension(
            "segment_lib._columns",
            sources=["segment_lib/_columns.c"],
            optional=True,
        ),
    ]
)
