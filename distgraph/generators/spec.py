"""Generator specs: the strings that stand for a generated graph wherever a file can.

Grammar: ``FAMILY:ARG[:OPTION]...`` where ``OPTION`` is ``key=value`` or a bare flag.

==========  ==============  =============================================================
family      ARG             options (default)
==========  ==============  =============================================================
kron        SCALE           ef=16, seed, a=0.57, b=0.19, c=0.19, directed, noperm
urand       SCALE           ef=16, seed, directed
grid        ROWSxCOLS|SCALE drop=0 (fraction of edges removed: road-like), seed
rgg         SCALE           radius (0.55 sqrt(ln n / n)), seed
delaunay    SCALE           seed
==========  ==============  =============================================================

Every family also takes ``weights=uniform|potential|negcycle`` (uniform integers in
[1, 255]; then potential-shifted, negative arcs but no negative cycle, directed; then
also a planted negative cycle of ``cycle=4`` vertices) and ``seed=`` (default
27491095, gapbs' ``kRandSeed``).  Examples: ``kron:20``, ``urand:18:seed=3``,
``kron:16:ef=8:directed:weights=uniform``, ``grid:512x1024:drop=0.2``, ``rgg:20``.

The spec and the parsed parameters are recorded in ``graph.meta`` (``spec``,
``generator``, ``params``, ``weights``).
"""

from __future__ import annotations

import os
import re

from ..errors import InvalidArgumentError
from .kron import DEFAULT_SEED

__all__ = ["is_spec", "from_spec", "parse_spec", "FAMILIES", "describe_families"]

_WEIGHTS = ("uniform", "potential", "negcycle")


def _int(lo=None):
    def conv(s):
        v = int(s)
        if lo is not None and v < lo:
            raise ValueError
        return v
    conv.what = "an integer" + (f" >= {lo}" if lo is not None else "")
    return conv


def _float(s):
    return float(s)


_float.what = "a number"


def _choice(*values):
    def conv(s):
        if s not in values:
            raise ValueError
        return s
    conv.what = "one of " + ", ".join(values)
    return conv


def _flag(s):
    low = s.lower()
    if low in ("", "1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError


_flag.what = "a flag (bare, or =true/false)"

_COMMON = {
    "seed": (_int(0), DEFAULT_SEED, "random seed"),
    "weights": (_choice(*_WEIGHTS), None,
                "uniform: integers in [1, 255] (both arcs of an edge alike); potential: uniform then "
                "w + p(u) - p(v), negative arcs, no negative cycle (directed); negcycle: potential plus "
                "a planted negative cycle"),
    "cycle": (_int(2), 4, "vertices on the planted negative cycle (weights=negcycle)"),
}

#: family -> (ARG description, summary, {option: (converter, default, help)})
FAMILIES = {
    "kron": ("SCALE", "Kronecker/R-MAT, Graph500/GAP parameters, 2^SCALE vertices, ids permuted, undirected", {
        "ef": (_int(1), 16, "edges per vertex before dedup"),
        "a": (_float, 0.57, "R-MAT probability A"),
        "b": (_float, 0.19, "R-MAT probability B"),
        "c": (_float, 0.19, "R-MAT probability C"),
        "directed": (_flag, False, "keep arcs directed (default: symmetrized, as GAP)"),
        "noperm": (_flag, False, "do not permute vertex ids"),
        **_COMMON}),
    "urand": ("SCALE", "uniform random (GAP urand), 2^SCALE vertices, undirected", {
        "ef": (_int(1), 16, "edges per vertex before dedup"),
        "directed": (_flag, False, "keep arcs directed (default: symmetrized, as GAP)"),
        **_COMMON}),
    "grid": ("ROWSxCOLS or SCALE", "2-D 4-neighbour grid (SCALE: 2^(SCALE//2) x 2^(SCALE-SCALE//2)), undirected", {
        "drop": (_float, 0.0, "fraction of edges removed at random (road-like)"),
        **_COMMON}),
    "rgg": ("SCALE", "random geometric graph on 2^SCALE points of the unit square (like rgg_n_2_SCALE)", {
        "radius": (_float, None, "connection radius (default 0.55 sqrt(ln n / n))"),
        **_COMMON}),
    "delaunay": ("SCALE", "Delaunay triangulation of 2^SCALE random points (like delaunay_nSCALE)", dict(_COMMON)),
}


def is_spec(s) -> bool:
    """True when ``s`` names a generator (``kron:...``, ``urand:...``, ``grid:...``,
    ``rgg:...``, ``delaunay:...``) and is not an existing file."""
    if not isinstance(s, str) or ":" not in s:
        return False
    family = s.split(":", 1)[0].strip().lower()
    return family in FAMILIES and not os.path.exists(s)


def parse_spec(spec: str):
    """Split a spec into ``(family, arg, options)`` with typed option values.

    Raises
    ------
    InvalidArgumentError
        Unknown family or option, bad value; the message names it, the allowed
        values, and the spec.
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a str; got {type(spec).__name__}")
    parts = spec.strip().split(":")
    family = parts[0].lower()
    if family not in FAMILIES:
        raise InvalidArgumentError(f"generator family must be one of {', '.join(FAMILIES)}; got {parts[0]!r} "
                                   f"(in spec {spec!r})")
    argname, _, options = FAMILIES[family]
    if len(parts) < 2 or not parts[1]:
        raise InvalidArgumentError(f"{family} spec must give {argname} after '{family}:'; got {spec!r} "
                                   f"(example: {family}:{'16x16' if family == 'grid' else '16'})")
    arg = parts[1]
    opts = {k: d for k, (_, d, _) in options.items()}
    seen = set()
    for item in parts[2:]:
        key, eq, raw = item.partition("=")
        key = key.strip().lower()
        if key not in options:
            raise InvalidArgumentError(f"{family} spec option must be one of {', '.join(options)}; got {key!r} "
                                       f"(in spec {spec!r})")
        if key in seen:
            raise InvalidArgumentError(f"{family} spec option {key} must be given once; got it twice (in spec {spec!r})")
        seen.add(key)
        conv = options[key][0]
        if not eq and conv is not _flag:
            raise InvalidArgumentError(f"{family} spec option {key} must be written {key}=VALUE with VALUE "
                                       f"{conv.what}; got {item!r} (in spec {spec!r})")
        try:
            opts[key] = conv(raw.strip())
        except ValueError:
            raise InvalidArgumentError(f"{family} spec option {key} must be {conv.what}; got {raw!r} "
                                       f"(in spec {spec!r})") from None
    return family, arg, opts


def _scale(family, arg, spec):
    try:
        return int(arg)
    except ValueError:
        raise InvalidArgumentError(f"{family} spec SCALE must be an integer; got {arg!r} (in spec {spec!r})") from None


def from_spec(spec: str):
    """Generate the graph a spec names (see the module docstring for the grammar).

    Examples
    --------
    >>> g = from_spec("kron:6:seed=2:weights=uniform")
    >>> g.n, g.directed, g.meta["spec"]
    (64, False, 'kron:6:seed=2:weights=uniform')
    """
    from . import delaunay, grid, kronecker, rgg, urand
    from .grid import grid_shape
    from .weights import plant_negative_cycle, potential_shift, uniform_weights

    family, arg, o = parse_spec(spec)
    seed = o["seed"]
    try:
        if family == "kron":
            g = kronecker(_scale(family, arg, spec), o["ef"], seed, a=o["a"], b=o["b"], c=o["c"],
                          directed=o["directed"], permute=not o["noperm"])
        elif family == "urand":
            g = urand(_scale(family, arg, spec), o["ef"], seed, directed=o["directed"])
        elif family == "grid":
            m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", arg)
            if m:
                rows, cols = int(m.group(1)), int(m.group(2))
            elif re.fullmatch(r"\s*\d+\s*", arg):
                rows, cols = grid_shape(int(arg))
            else:
                raise InvalidArgumentError(f"grid spec must give ROWSxCOLS or SCALE; got {arg!r} (in spec {spec!r})")
            g = grid(rows, cols, drop=o["drop"], seed=seed)
        elif family == "rgg":
            g = rgg(_scale(family, arg, spec), seed, radius=o["radius"])
        else:
            g = delaunay(_scale(family, arg, spec), seed)
        if o["weights"] is not None:
            g = uniform_weights(g, 1, 255, seed)
            if o["weights"] in ("potential", "negcycle"):
                g = potential_shift(g, seed)
            if o["weights"] == "negcycle":
                g, _ = plant_negative_cycle(g, o["cycle"], seed)
    except InvalidArgumentError as e:
        if "(in spec" in str(e):
            raise
        raise InvalidArgumentError(f"{e} (in spec {spec!r})") from None
    g.meta["spec"] = spec
    g.meta["options"] = {k: v for k, v in o.items()}
    return g


def describe_families() -> str:
    """The families and their options, as ``distgraph generate --list`` prints them."""
    lines = ["Generator specs: FAMILY:ARG[:key=value|:flag]...", ""]
    for family, (argname, summary, options) in FAMILIES.items():
        lines.append(f"{family}:{argname}")
        lines.append(f"    {summary}")
        for key, (conv, default, help_) in options.items():
            d = "" if default is None or conv is _flag else f" (default {default})"
            lines.append(f"    {key:<9} {conv.what}{d}: {help_}")
        lines.append("")
    lines.append("Examples: kron:20  urand:18:seed=3  kron:16:ef=8:directed:weights=uniform  "
                 "grid:512x1024:drop=0.2  rgg:20  delaunay:16:weights=potential")
    return "\n".join(lines)
