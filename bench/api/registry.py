"""The metric registry: plugins are plain functions registered by a decorator.

A metric is a pure function ``fn(p, q, *, seed, **params) -> float`` of two corpora,
either as texts (sequences of str) or as embeddings (2-D float arrays), where a
larger value means *more different*; registered with ``higher_is_more_different=False`` it is a
similarity (larger = more alike), whose negation the harness scores (``textmetric_bench.measures.orientation``).
Built-ins live in the top-level ``metrics`` package; third-party packages register through the
entry-point group ``textmetric_bench.metrics`` (the entry point names a module to import or a
decorated function).
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
import inspect
import logging
import multiprocessing
import sys
import traceback
from dataclasses import dataclass, field
from importlib import import_module, metadata
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from textmetric_bench.errors import ConfigError

log = logging.getLogger(__name__)

#: The entry-point group of metric plugins; the built-in metrics come through it too (pyproject.toml), so this
#: module imports no metric by name.
ENTRY_POINT_GROUP = "textmetric_bench.metrics"
Inputs = Literal["texts", "embeddings"]
#: What a metric may declare it ``needs`` beyond its inputs: the shared tokeniser, the run's causal LM,
#: or the known position of each corpus in its collection (``textmetric_bench.api.positions``; the oracle only).
NEEDS = ("tokens", "lm", "known_position")
#: What a plugin that does not state a fact of the metric catalogue shows for it.
NOT_DECLARED = "not declared"


@dataclass(frozen=True)
class TextLimit:
    """What a metric reads of each text: its first ``limit`` ``unit``s (a parameter's value, named by ``param``);
    ``count(texts)`` gives each text's length in those units, so a run can say how many texts it cut."""

    limit: int
    unit: str
    param: str
    count: Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class MetricInfo:
    """One registered metric and what it needs."""

    name: str
    fn: Callable[..., float]
    inputs: Inputs
    symmetric: bool
    description: str = ""
    higher_is_more_different: bool = True
    module: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    opt_in: bool = False
    prepare: Callable[..., None] | None = None
    version: str = ""
    needs: tuple[str, ...] = ()
    source: str = NOT_DECLARED
    value_range: tuple[float, float] | None = None
    failure_modes: tuple[str, ...] = ()
    stochastic: bool = False
    text_limit: Callable[..., TextLimit] | None = None

    def __call__(self, p, q, *, seed: int = 0, **params) -> float:
        if "known_position" in self.needs:  # only such a metric's call may read known positions
            from textmetric_bench.api.positions import reading_positions

            with reading_positions(self.name):
                return self.fn(p, q, seed=seed, **params)
        return self.fn(p, q, seed=seed, **params)

    def check_params(self, params: dict[str, Any]) -> None:
        """Raise if ``params`` names a parameter the metric does not take."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            from difflib import get_close_matches

            near = {name: get_close_matches(name, list(self.params), n=1) for name in unknown}
            hints = [found[0] + ("" if len(unknown) == 1 else f" for {name}") for name, found in near.items() if found]
            raise ConfigError(
                f"metric {self.name!r} has no parameter(s) {unknown}; it takes {sorted(self.params) or 'no parameters'}"
                + (f"; did you mean {', '.join(hints)}?" if hints else "")
            )


_REGISTRY: dict[str, MetricInfo] = {}
_PLUGINS_LOADED = False
#: Metric modules that failed to import, by module: the plugin, the error, its traceback, the metrics withdrawn.
_PLUGIN_FAILURES: dict[str, dict] = {}
#: Whether a plugin that fails to import is logged when it is loaded (off where every run reports it: the CLI).
_ANNOUNCE_FAILURES = True


def announce_plugin_failures(enabled: bool) -> None:
    """Log (``enabled``, the default) or keep quiet a plugin's import failure when it is loaded. The command line
    turns it off: each of its runs reports the failure itself (console, log, run.json, exit status) and an unknown
    metric names it, so the line at loading said the same thing twice."""
    global _ANNOUNCE_FAILURES
    _ANNOUNCE_FAILURES = enabled


#: The default of the decorator's required arguments: absent, reported with the function they were meant for.
_REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "<required>"})()


def metric(
    name: str = _REQUIRED,
    *,
    inputs: Inputs = _REQUIRED,
    symmetric: bool = _REQUIRED,
    description: str = "",
    higher_is_more_different: bool = True,
    opt_in: bool = False,
    prepare: Callable[..., None] | None = None,
    version: str = "1",
    needs: tuple[str, ...] = (),
    source: str = NOT_DECLARED,
    value_range: tuple[float, float] | None = None,
    failure_modes: tuple[str, ...] = (),
    stochastic: bool = False,
    text_limit: Callable[..., TextLimit] | None = None,
    **unknown: Any,
) -> Callable[[Callable[..., float]], Callable[..., float]]:
    """Register ``fn`` as metric ``name``; the function is returned unchanged.

    Required: ``name``, ``inputs`` (``"texts"`` or ``"embeddings"``) and ``symmetric`` (True when
    d(p, q) = d(q, p)). A missing or wrong argument raises when the decorator meets the function, naming
    the function, its module and the argument (``DECORATOR_ARGUMENTS``).

    ``higher_is_more_different=False`` declares a similarity (larger = more alike): every measure
    is then computed on the negated value, and tables mark it "(similarity, negated)".
    ``opt_in`` keeps the metric out of ``metrics=default`` (for metrics that cost minutes per
    run, such as a language-model pass over every text); ``metrics=all`` or its name selects it.
    ``prepare(texts, **params)``, if given, is called once per run with every text the metric
    will see, before any pair is evaluated, so per-text work (an LM pass) can be batched and
    cached up front instead of corpus by corpus; it must not change any result.
    ``version``: bump it when the metric's results change; with the installing package's version
    and a digest of the module's source and of the modules of its package it imports (``helper_modules``) it
    forms ``MetricInfo.version``, and a resumed run
    recomputes the evaluations a metric of another version made.

    Facts for the metric catalogue (``python -m textmetric_bench.running.catalogue`` writes ``metrics/README.md``;
    a plugin may leave them out, they then read "not declared"): ``needs``, what the metric uses beyond
    its inputs (any of ``NEEDS``; ``"known_position"`` is also what lets a call read
    ``textmetric_bench.api.known_position``); ``source``, the paper and equation (e.g. ``"004 §4.1, Eq. 2"``);
    ``value_range``, (low, high) of its values, ``math.inf`` for unbounded; ``failure_modes``, the
    conditions under which it is known to mislead (small n, few clusters, short texts); ``stochastic``,
    whether its value depends on ``seed`` on fixed corpora (the KSC task then measures its own noise).
    ``text_limit(**params) -> TextLimit``: how much of each text the metric reads, for a metric that cuts
    long texts (each run records how many texts it cut, per corpus).
    """
    if callable(name) and not isinstance(name, str):  # a bare `@metric` met the function itself
        raise TypeError(
            f"@metric on {_where(name)}: give its arguments, e.g. "
            f"@metric({name.__name__!r}, inputs='texts', symmetric=True)"
        )
    arguments = {
        "name": name,
        "inputs": inputs,
        "symmetric": symmetric,
        "description": description,
        "higher_is_more_different": higher_is_more_different,
        "opt_in": opt_in,
        "prepare": prepare,
        "version": version,
        "needs": needs,
        "source": source,
        "value_range": value_range,
        "failure_modes": failure_modes,
        "stochastic": stochastic,
        "text_limit": text_limit,
    }
    problems = [f"unknown argument {key!r}" + _did_you_mean(key, DECORATOR_ARGUMENTS) for key in unknown]
    problems += [problem for key, value in arguments.items() if (problem := _argument_problem(key, value))]
    if problems:

        def refuse(fn: Callable[..., float]) -> Callable[..., float]:
            label = name if isinstance(name, str) else "?"
            raise TypeError(f"@metric({label!r}) on {_where(fn)}: " + "; ".join(problems))

        return refuse

    def register(fn: Callable[..., float]) -> Callable[..., float]:
        params = _keyword_params(name, fn)
        info = MetricInfo(
            name=name,
            fn=fn,
            inputs=inputs,
            symmetric=symmetric,
            description=description or (inspect.getdoc(fn) or "").split("\n")[0],
            higher_is_more_different=higher_is_more_different,
            module=fn.__module__,
            params=params,
            opt_in=opt_in,
            prepare=prepare,
            version=_metric_version(fn, version),
            needs=tuple(needs),
            source=source,
            value_range=None if value_range is None else (float(value_range[0]), float(value_range[1])),
            failure_modes=tuple(failure_modes),
            stochastic=stochastic,
            text_limit=text_limit,
        )
        existing = _REGISTRY.get(name)
        if existing is not None and (existing.module, existing.fn.__qualname__) != (
            info.module,
            fn.__qualname__,
        ):
            raise ValueError(
                f"metric name {name!r} is already registered by {existing.module}; "
                f"choose another name for {info.module}.{fn.__qualname__}"
            )
        _REGISTRY[name] = info
        fn.metric_info = info  # type: ignore[attr-defined]
        return fn

    return register


#: Every argument of ``@metric``: what it accepts, and how to say so. The first three are required.
DECORATOR_ARGUMENTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "name": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty str, the metric's name"),
    "inputs": (lambda v: v in ("texts", "embeddings"), "'texts' or 'embeddings'"),
    "symmetric": (lambda v: isinstance(v, bool), "True or False: whether d(p, q) = d(q, p)"),
    "description": (lambda v: isinstance(v, str), "a str"),
    "higher_is_more_different": (lambda v: isinstance(v, bool), "True (a distance) or False (a similarity)"),
    "opt_in": (lambda v: isinstance(v, bool), "True or False"),
    "prepare": (lambda v: v is None or callable(v), "None or a function prepare(texts, **params)"),
    "text_limit": (lambda v: v is None or callable(v), "None or a function text_limit(**params) -> TextLimit"),
    "version": (lambda v: isinstance(v, str), "a str, e.g. '2'"),
    "needs": (lambda v: isinstance(v, (tuple, list)) and set(v) <= set(NEEDS), f"a tuple of {NEEDS}"),
    "source": (lambda v: isinstance(v, str), "a str, e.g. '004 §4.1, Eq. 2'"),
    "value_range": (
        lambda v: (
            v is None
            or (
                isinstance(v, (tuple, list))
                and len(v) == 2
                and all(isinstance(x, (int, float)) for x in v)
                and v[0] <= v[1]
            )
        ),
        "None or (low, high) with low <= high",
    ),
    "failure_modes": (lambda v: isinstance(v, (tuple, list)) and all(isinstance(x, str) for x in v), "a tuple of str"),
    "stochastic": (lambda v: isinstance(v, bool), "True or False"),
}


def _argument_problem(key: str, value: Any) -> str | None:
    accepts, advice = DECORATOR_ARGUMENTS[key]
    if value is _REQUIRED:
        return f"argument {key!r} is missing ({key}: {advice})"
    if not accepts(value):
        return f"argument {key}={value!r} is not valid: give {advice}"
    return None


def _did_you_mean(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _where(fn: Any) -> str:
    """``module.function`` (file:line) of the function a decorator met."""
    module, qualname = getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn))
    code = getattr(fn, "__code__", None)
    place = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"function {qualname} in module {module}{place}"


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    return metadata.packages_distributions()


def _metric_version(fn: Callable[..., float], declared: str) -> str:
    """``declared`` + the version of the distribution that ships the module + a digest of the module's source and
    of the sources of the modules of its own package that it imports (``helper_modules``)."""
    import hashlib

    top = fn.__module__.split(".")[0]
    if top == "textmetric_bench":
        from textmetric_bench import __version__ as shipped
    else:
        try:
            dists = _distributions().get(top) or []
            shipped = metadata.version(dists[0]) if dists else "unpackaged"
        except Exception:
            shipped = "unknown"
    try:
        source = inspect.getsource(sys.modules[fn.__module__])
    except (KeyError, OSError, TypeError):
        return f"{declared}+{shipped}+nosource"
    digest = hashlib.sha256(source.encode())
    for name, text in helper_modules(fn.__module__):  # none: the digest of the module alone, as before helpers counted
        digest.update(f"\0{name}\0{text}".encode())
    return f"{declared}+{shipped}+{digest.hexdigest()[:10]}"


def _module_source(name: str) -> tuple[str, ast.Module, bool] | None:
    """The source of module ``name``, parsed, and whether it is a package; None where there is no Python source."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        text = Path(spec.origin).read_text(encoding="utf-8")
        return text, ast.parse(text), spec.submodule_search_locations is not None
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _imported_names(tree: ast.Module, name: str, is_package: bool, own: Callable[[str], bool]) -> set[str]:
    """Every module of those ``own`` accepts that an import statement of ``tree`` names, at any depth (a function's
    lazy import too); relative imports resolved from ``name``; ``from m import x`` counts ``m.x`` where that is a
    module, else ``m``. Only modules ``own`` accepts are looked up, so no other package is imported."""
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if own(alias.name))
        elif isinstance(node, ast.ImportFrom):
            try:
                base = (
                    importlib.util.resolve_name("." * node.level + (node.module or ""), here)
                    if node.level
                    else node.module or ""
                )
            except (ImportError, ValueError):
                continue
            if not own(base):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in sys.modules or _module_source(sub) is not None else base)
    return found


@functools.lru_cache(maxsize=None)
def helper_modules(module: str) -> tuple[tuple[str, str], ...]:
    """(name, source) of every module of ``module``'s own package (its parent package; the module alone if it has
    none) that ``module`` imports, directly or through one another, sorted by name; ``module`` itself not among them.

    What a metric's version digests beside its own module: ``metrics/divergences.py`` is part of the ten
    divergences registered from other modules. Read from the sources, not from grimp's import graph: grimp finds
    only top-level packages laid out as they import, and the checkout maps ``textmetric_bench.metrics`` to
    ``metrics/`` (it reports the built-in metric modules missing from the graph of an editable install)."""
    package = module.rpartition(".")[0] or module
    own = lambda name: name == package or name.startswith(package + ".")  # noqa: E731
    seen, todo, sources = {module}, [module], {}
    while todo:
        name = todo.pop()
        parsed = _module_source(name)
        if parsed is None:
            continue
        text, tree, is_package = parsed
        if name != module:
            sources[name] = text
        for imported in _imported_names(tree, name, is_package, own):
            if imported not in seen:
                seen.add(imported)
                todo.append(imported)
    return tuple(sorted(sources.items()))


def _keyword_params(name: str, fn: Callable[..., float]) -> dict[str, Any]:
    """Validate the plugin signature and return its tunable parameters with defaults."""
    sig = inspect.signature(fn)
    positional = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != 2:
        raise TypeError(f"metric {name!r}: takes exactly two positional corpora (p, q)")
    params: dict[str, Any] = {}
    has_seed = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD or p.kind is p.VAR_POSITIONAL:
            raise TypeError(f"metric {name!r}: *args/**kwargs are not allowed; name every parameter")
        if p.kind is not p.KEYWORD_ONLY:
            continue
        if p.default is p.empty:
            raise TypeError(f"metric {name!r}: keyword parameter {p.name!r} needs a default")
        if p.name == "seed":
            has_seed = True
        else:
            params[p.name] = p.default
    if not has_seed:
        raise TypeError(f"metric {name!r}: needs a keyword-only `seed` parameter")
    return params


#: The package of the built-in metrics (the repository's metrics/ folder): its name tells a built-in metric from a
#: plugin's; the package itself is loaded through its entry point, as a plugin is.
BUILTIN_PACKAGE = "textmetric_bench.metrics"


def is_builtin_module(module: str) -> bool:
    """Whether ``module`` is one of the built-in metric modules shipped with the harness."""
    return module == BUILTIN_PACKAGE or module.startswith(BUILTIN_PACKAGE + ".")


def load_builtin_metrics() -> None:
    """Import the built-in metrics through this package's own entry point in the plugin group (pyproject.toml)."""
    builtin = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if is_builtin_module(ep.value)]
    if not builtin:
        raise ImportError(
            f"no entry point {BUILTIN_PACKAGE!r} in the group {ENTRY_POINT_GROUP!r}: the built-in "
            "metrics are not installed; reinstall textmetric-bench (in a checkout: make venv)"
        )
    for ep in builtin:
        ep.load()  # a built-in that fails to import is a broken installation: raise


def import_metric_module(module: str, plugin: str | None = None, load: Callable[[], Any] | None = None) -> bool:
    """Import a module of metrics (``load``: how, by default ``import_module``); True if it imported.

    A module that raises is recorded (``plugin_failures``), not raised: the other metrics still run, and every run
    reports it (console, log with its traceback, ``run.json``, exit status 3). The metrics it registered before
    raising are withdrawn, so a half-imported module never runs; naming one gives "unknown metric", which then
    names the failed module."""
    before = dict(_REGISTRY)
    try:
        (load or (lambda: import_module(module)))()
    except Exception as exc:  # a broken plugin must not hide the others
        withdrawn = sorted(name for name in _REGISTRY if before.get(name) is not _REGISTRY[name])
        for name in withdrawn:
            del _REGISTRY[name]
            if name in before:
                _REGISTRY[name] = before[name]
        error = f"{type(exc).__name__}: {exc}"
        if (
            _ANNOUNCE_FAILURES
            and (_PLUGIN_FAILURES.get(module) or {}).get("error") != error
            and multiprocessing.parent_process() is None
        ):
            # said once, by the process the user started (not by each worker); every run reports it again
            log.error("could not load metric plugin %s: %s", plugin if plugin else module, error)
        _PLUGIN_FAILURES[module] = {
            "plugin": plugin or module,
            "module": module,
            "error": error,
            "withdrawn": withdrawn,
            "traceback": traceback.format_exc(),
        }
        return False
    _PLUGIN_FAILURES.pop(module, None)
    return True


def plugin_failures() -> dict[str, dict]:
    """The metric modules that failed to import (after loading every plugin), by module: ``plugin`` (its entry
    point's name, or the module), ``error`` (one line), ``withdrawn`` (the metrics it had registered, left out),
    ``traceback``."""
    load_plugins()
    return {module: dict(record) for module, record in _PLUGIN_FAILURES.items()}


def failed_plugins_sentence() -> str:
    """ " Metric plugins that failed to load: <plugin> (<module>: <error>; its traceback: python -c 'import
    <module>'); ..." or "" (for "unknown metric": a plugin that raised before it registered anything may hold it)."""
    if not _PLUGIN_FAILURES:
        return ""
    items = "; ".join(
        f"{r['plugin']} ({module}: {r['error']}; its traceback: python -c 'import {module}')"
        for module, r in _PLUGIN_FAILURES.items()
    )
    return f" Metric plugin{'s' if len(_PLUGIN_FAILURES) > 1 else ''} that failed to load: {items}."


def load_plugins() -> None:
    """Import every entry point of the plugin group (once): the built-in metrics first, then other packages' plugins.

    The built-ins are this package's own entry point (pyproject.toml); the package missing or failing to import is
    a broken installation and raises. A module of metrics that fails to import, in that package (a file you added
    to ``metrics/``) or in another package's plugin, is recorded and the others still load (``import_metric_module``).
    """
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    load_builtin_metrics()
    _PLUGINS_LOADED = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if not is_builtin_module(ep.value):
            import_metric_module(ep.value, plugin=ep.name, load=ep.load)


def available_metrics() -> list[str]:
    """Names of all registered metrics, sorted."""
    load_plugins()
    return sorted(_REGISTRY)


def default_metrics() -> list[str]:
    """Names selected by ``metrics=default``: every registered metric except the opt-in ones."""
    load_plugins()
    return sorted(n for n, i in _REGISTRY.items() if not i.opt_in)


def builtin_metrics() -> list[str]:
    """Names of the metrics shipped in this repository's ``metrics`` package."""
    load_plugins()
    return sorted(n for n, i in _REGISTRY.items() if is_builtin_module(i.module))


def get_metric(name: str) -> MetricInfo:
    """Look up a metric; an unknown name raises with close matches."""
    load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        for module, record in _PLUGIN_FAILURES.items():
            if name in record["withdrawn"]:
                raise ConfigError(
                    f"metric {name!r} is defined in {module}, which failed to import: {record['error']}; fix the "
                    f"module (its traceback: python -c 'import {module}')"
                ) from None
        for module, record in _PLUGIN_FAILURES.items():
            if name in (record["plugin"], module.rpartition(".")[2]):  # raised before registering: named alike
                raise ConfigError(
                    f"unknown metric {name!r}: the metric plugin {record['plugin']} failed to load ({module}: "
                    f"{record['error']}); fix the module (its traceback: python -c 'import {module}')"
                ) from None
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3, cutoff=0.6)
        hint = (
            f" Did you mean {', '.join(close)}?"
            if close
            else f" A metric of your own registers from an installed package's entry point (group "
            f"{ENTRY_POINT_GROUP}; a module on the path alone is not read: 'Adding a metric' in the docs)."
        )
        raise ConfigError(
            f"unknown metric {name!r}.{hint}{failed_plugins_sentence()} Registered metrics: "
            f"{', '.join(sorted(_REGISTRY))}"
        ) from None


def unregister(name: str) -> None:
    """Remove a metric (for tests that register temporary plugins)."""
    _REGISTRY.pop(name, None)
