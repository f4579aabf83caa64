"""Builds the compiled decoder kernel, the guarded file mappings and the header walk. Everything else is declared in pyproject.toml.

Both are optional, at build and at run time: a compiler that fails (or none) leaves them out of the build with a
warning (``optional=True``), and kafkaseg then warns once and uses its pure-Python twin,
``kafkaseg/decode/_kernel_py.py``, which has the same interface and output; without ``kafkaseg.storage._mapped``
files are read with ``pread`` only; without ``kafkaseg.wire._walk``, headers are walked by its twin
``kafkaseg/wire/_walk_py.py``. ``KAFKASEG_NO_EXTENSION=1`` builds neither (a pure-Python install).
"""

import os

from setuptools import Extension, setup

ext_modules = []
if os.environ.get("KAFKASEG_NO_EXTENSION") != "1":
    from Cython.Build import cythonize

    ext_modules = cythonize(
        [Extension("kafkaseg.decode._kernel", ["kafkaseg/decode/_kernel.pyx"],
                   include_dirs=["kafkaseg/decode"], depends=["kafkaseg/decode/_varint.h"],
                   extra_compile_args=["-O3"]),
         Extension("kafkaseg.storage._mapped", ["kafkaseg/storage/_mapped.pyx"],
                   include_dirs=["kafkaseg/storage"], depends=["kafkaseg/storage/_sigbus_guard.h"],
                   extra_compile_args=["-O2"]),
         Extension("kafkaseg.wire._walk", ["kafkaseg/wire/_walk.pyx"], extra_compile_args=["-O3"])],
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False,
                             "cdivision": True, "initializedcheck": False},
    )
    for extension in ext_modules:
        extension.optional = True  # (set here: cythonize makes new Extensions without it)

setup(ext_modules=ext_modules)
