"""Builds the compiled decoder kernel. Everything else is declared in pyproject.toml.

The kernel is optional at run time: when it is not built (no compiler), kafkaseg warns once and uses its pure-Python
twin, ``kafkaseg/decode/_kernel_py.py``, which has the same interface and output.
"""

import os

from setuptools import Extension, setup

ext_modules = []
if os.environ.get("KAFKASEG_NO_EXTENSION") != "1":
    from Cython.Build import cythonize

    ext_modules = cythonize(
        [Extension("kafkaseg.decode._kernel", ["kafkaseg/decode/_kernel.pyx"],
                   include_dirs=["kafkaseg/decode"], depends=["kafkaseg/decode/_varint.h"],
                   extra_compile_args=["-O3"])],
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False,
                             "cdivision": True, "initializedcheck": False},
    )

setup(ext_modules=ext_modules)
