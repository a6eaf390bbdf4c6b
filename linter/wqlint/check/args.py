"""The command line of a checker: what Kbuild passes, `$(CHECKFLAGS) $(c_flags) file.c`, and
wqlint's own options, which go right after `check`."""
from __future__ import annotations

import re

from wqlint.check.errors import CheckError

# Options that take a value, either joined (-DX, -Idir) or as the next argument (-D X, -I dir).
_VALUED = ("-D", "-U", "-I", "-include", "-imacros", "-isystem", "-iquote", "-idirafter")
# Options given to `sparse -E -dM` to learn the predefined macros of the configuration.
_SPARSE_ONLY = re.compile(r"^(--arch=.*|-m(32|64|x32|big-endian|little-endian|cmodel=.*)|-O.*|-std=.*|"
                          r"-f(un)?signed-char|-fshort-wchar)$")
# wqlint's own options (everything else is Kbuild's): do they take a value?
OWN_OPTIONS = {"--also-sparse": False, "--kernel-version": True, "--cpus": True, "--max-cpus": True,
               "--rules": True}


class Invocation:
    def __init__(self, file: str, defines=(), includes=(), sparse=(), all_args=()):
        self.file = file
        self.defines = list(defines)  # -D/-U, in order, as cpp options
        self.includes = list(includes)  # -I/-include/-isystem/... and -nostdinc
        self.sparse = list(sparse)  # options that shape sparse's predefined macros
        self.all_args = list(all_args)  # everything, for --also-sparse


def parse_args(args: list) -> Invocation:
    """What Kbuild passes a checker. Unknown options are accepted and ignored."""
    files: list[str] = []
    defines: list[str] = []
    includes: list[str] = []
    sparse: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        opt = next((o for o in _VALUED if a == o or (a.startswith(o) and o in ("-D", "-U", "-I"))), None)
        if opt:
            if a == opt:
                if i + 1 >= len(args):
                    raise CheckError(f"option {opt} needs a value")
                value = args[i + 1]
                i += 1
            else:
                value = a[len(opt):]
            (defines if opt in ("-D", "-U") else includes).extend([opt, value])
        elif a == "-nostdinc":
            includes.append(a)
        elif _SPARSE_ONLY.match(a):
            sparse.append(a)
        elif a.startswith("-"):
            pass  # -Wp,-MMD,..., -g, -pipe, --param=...: not the checker's concern
        else:
            files.append(a)
        i += 1
    if not files:
        raise CheckError("no source file given")
    if len(files) > 1:
        raise CheckError(f"one source file at a time, got {len(files)}: {' '.join(files)}")
    return Invocation(file=files[0], defines=defines, includes=includes, sparse=sparse, all_args=list(args))


def split_own(argv: list):
    """(wqlint's own options as {name: value}, Kbuild's arguments), or None when argv needs the
    click command to say what is wrong (--help, a flag given a value, a value missing)."""
    opts, rest, i = {}, [], 0
    while i < len(argv):
        a = argv[i]
        name, eq, value = a.partition("=")
        if a == "--help":
            return None
        if name in OWN_OPTIONS:
            if not OWN_OPTIONS[name]:
                if eq:
                    return None
                value = True
            elif not eq:
                if i + 1 >= len(argv):
                    return None
                i += 1
                value = argv[i]
            opts[name] = value
        else:
            rest.append(a)
        i += 1
    return opts, rest
