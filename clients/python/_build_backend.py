"""setuptools' build backend, with one check first: building a wheel offline.

`pip install --no-build-isolation --no-index` (the README's offline install) builds with the
setuptools of the interpreter at hand. Before 70.1 setuptools builds wheels through the `wheel`
module; without it pip stops at `invalid command 'bdist_wheel'`, which names neither the module
nor the fix. Debian's python3 has it (python3-pip brings python3-wheel); another python3 first
on PATH (pyenv, conda) often lacks it, and pyzmq too.
"""

import sys

import setuptools
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every hook this module does not wrap)


def _check_wheel_module() -> None:
    if tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit()) >= (70, 1):
        return  # builds wheels itself
    try:
        import wheel  # noqa: F401
    except ModuleNotFoundError:
        sys.exit(f"hearth-client: setuptools {setuptools.__version__} of {sys.executable} builds wheels with the "
                 "module wheel, which it lacks: make the environment from Debian's /usr/bin/python3 "
                 "(apt install python3-pip python3-zmq python3-venv), or drop --no-build-isolation and "
                 "--no-index to fetch the build tools from PyPI (clients/python/README.md, Install)")


def prepare_metadata_for_build_wheel(*args, **kwargs):
    _check_wheel_module()
    return _setuptools.prepare_metadata_for_build_wheel(*args, **kwargs)


def build_wheel(*args, **kwargs):
    _check_wheel_module()
    return _setuptools.build_wheel(*args, **kwargs)


def prepare_metadata_for_build_editable(*args, **kwargs):
    _check_wheel_module()
    return _setuptools.prepare_metadata_for_build_editable(*args, **kwargs)


def build_editable(*args, **kwargs):
    _check_wheel_module()
    return _setuptools.build_editable(*args, **kwargs)
