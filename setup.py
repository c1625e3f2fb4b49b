"""Build of the compiled ingest core (native/*.cpp -> tlview.ingest._native).

Everything else is declared in pyproject.toml. The extension is optional: where no C++
compiler exists the build goes on without it, and tlview ingests with its pure-Python
parsers (slower; `tlview ingest` says so once). With TLVIEW_REQUIRE_NATIVE=1 (set by
scripts/test.sh, so in CI) a core that does not build fails the install instead.
"""

import glob
import os
import shlex
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build the extension if a compiler works; otherwise warn and continue."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any toolchain failure
            if _required():
                raise
            self._skip(e)

    def build_extension(self, ext):
        _compile_in_parallel(self.compiler)
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            if _required():
                raise
            self._skip(e)

    def _skip(self, e):
        print(f"warning: tlview's compiled ingest core was not built ({e}); "
              "tlview will ingest with its pure-Python parsers")


def _required():
    return os.environ.get("TLVIEW_REQUIRE_NATIVE") == "1"


def _compile_in_parallel(compiler):
    """Compile an extension's sources on every core (distutils compiles them one by one).

    The core's files take most of a minute one after another (docs/benchmarks.md); a
    fresh machine's install and CI wait for them.
    """
    if getattr(compiler, "_tlview_parallel", False):
        return
    serial = compiler.compile

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        if not hasattr(compiler, "_setup_compile") or len(sources) < 2:
            return serial(sources, output_dir, macros, include_dirs, debug,
                          extra_preargs, extra_postargs, depends)
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj):
            if obj in build:
                src, ext = build[obj]
                compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            # Largest first, so the longest file does not start last.
            order = sorted(objects, key=lambda o: -os.path.getsize(build[o][0])
                           if o in build else 0)
            list(pool.map(one, order))
        return objects

    compiler.compile = compile
    compiler._tlview_parallel = True


native = Extension(
    "tlview.ingest._native",
    sources=sorted(glob.glob("native/*.cpp")),
    depends=sorted(glob.glob("native/*.hpp")),
    language="c++",
    # TLVIEW_NATIVE_CFLAGS come last, so they win: scripts/sanitize.sh's -O1 and sanitizers
    extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden", "-Wall", "-Wextra",
                        "-Wno-missing-field-initializers", "-Wno-unused-parameter",
                        "-Wno-cast-function-type",
                        *shlex.split(os.environ.get("TLVIEW_NATIVE_CFLAGS", ""))],
    # A wheel built outside a manylinux image (scripts/build_wheel.sh) links the C++
    # runtime in, so it needs no newer libstdc++ than the user's machine has (stripped: 16 MB
    # of symbols otherwise). TLVIEW_NATIVE_CFLAGS / LDFLAGS: scripts/sanitize.sh's build.
    extra_link_args=(["-static-libstdc++", "-static-libgcc", "-s"]
                     if os.environ.get("TLVIEW_STATIC_CXX") == "1" else [])
    + shlex.split(os.environ.get("TLVIEW_NATIVE_LDFLAGS", "")),
)

setup(ext_modules=[native], cmdclass={"build_ext": OptionalBuildExt})
