"""Build of the compiled ingest core (native/*.cpp -> tlview.ingest._native).

Everything else is declared in pyproject.toml. The extension is optional: where no C++
compiler exists the build goes on without it, and tlview ingests with its pure-Python
parsers (slower; `tlview ingest` says so once).
"""

import glob
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build the extension if a compiler works; otherwise warn and continue."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any toolchain failure
            self._skip(e)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            if os.environ.get("TLVIEW_REQUIRE_NATIVE") == "1":
                raise
            self._skip(e)

    def _skip(self, e):
        print(f"warning: tlview's compiled ingest core was not built ({e}); "
              "tlview will ingest with its pure-Python parsers")


native = Extension(
    "tlview.ingest._native",
    sources=sorted(glob.glob("native/*.cpp")),
    depends=sorted(glob.glob("native/*.hpp")),
    language="c++",
    extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra",
                        "-Wno-missing-field-initializers", "-Wno-unused-parameter",
                        "-Wno-cast-function-type"],
)

setup(ext_modules=[native], cmdclass={"build_ext": OptionalBuildExt})
