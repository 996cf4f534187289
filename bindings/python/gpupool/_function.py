"""A Python function's parts for a function job (Cluster.submit_function, function_workload).

Only what needs Python lives here: the function's source (inspect.getsource, textwrap.dedent), the
check that it uses no names from outside its own body, and the arguments as JSON. The launcher, the
ConfigMap and the workload are built by the C++ library (gpupool/function_job.hpp).
"""
from __future__ import annotations

import builtins
import inspect
import json
import symtable
import textwrap
from typing import Any, Callable, Iterable, Optional

# Module-level names the launcher's program has besides the builtins.
_PROGRAM_GLOBALS = frozenset({"__name__", "__doc__", "__builtins__"})


def _refuse(name: str, rule: str, field: str = "function") -> None:
    from gpupool import _gpupool  # the C++ hierarchy: ValidationError(Error, ValueError)

    error = _gpupool.ValidationError(f'{field}: invalid value "{name}": {rule}')
    error.field, error.value, error.rule = field, name, rule
    raise error from None


def _outside_names(source: str, name: str) -> list[str]:
    """Names the source reads or writes that are neither its own nor builtins: globals of the
    function or of functions and classes inside it, and names its default values, annotations and
    decorators use at definition time."""
    table = symtable.symtable(source, f"<function {name}>", "exec")
    found: set[str] = set()

    def walk(t: symtable.SymbolTable) -> None:
        for sym in t.get_symbols():
            if t.get_type() == "module":
                if sym.is_referenced():
                    found.add(sym.get_name())
            elif sym.is_global() and (sym.is_referenced() or sym.is_assigned()):
                found.add(sym.get_name())
        for child in t.get_children():
            walk(child)

    walk(table)
    found.discard(name)  # recursion calls the function by its own name
    return sorted(n for n in found if n not in _PROGRAM_GLOBALS and not hasattr(builtins, n))


def function_parts(func: Callable[..., Any], args: Optional[dict] = None,
                   packages: Optional[Iterable[str]] = None) -> tuple[str, str, str, list[str]]:
    """(name, dedented source, args as JSON text, packages) of a self-contained function.

    TypeError for what is not a plain function; gpupool.ValidationError for a lambda, a closure, a
    function that uses names from outside its own body, and arguments that are not JSON.
    """
    if inspect.ismethod(func):
        raise TypeError(f"submit_function() takes a plain function, not the bound method {func.__qualname__}; "
                        "define the training function at module level")
    if not inspect.isfunction(func):
        raise TypeError(f"submit_function() takes a function defined with def, not {type(func).__name__}")
    name = func.__name__
    if name == "<lambda>":
        _refuse(name, "a lambda has no name to call in the job; define the function with def")
    if inspect.iscoroutinefunction(func) or inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        _refuse(name, f"{name} is a coroutine or generator function; launch a plain function")
    if func.__code__.co_freevars:
        names = ", ".join(func.__code__.co_freevars)
        _refuse(name, f"{name} is a closure over {names} of the function that defined it; the job runs only "
                      f"{name}'s own source: pass those values in args= or define them inside {name}")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as e:
        _refuse(name, f"the source of {name} cannot be read ({e}); define it in a file or a notebook cell")
    try:
        outside = _outside_names(source, name)
    except SyntaxError as e:
        _refuse(name, f"the source of {name} does not parse on its own ({e.msg})")
    if outside:
        _refuse(name, f"{name} uses names from outside its own body: {', '.join(outside)}; the job runs only "
                      f"{name}'s source: import modules inside {name}, pass values in args=, or define helpers "
                      f"inside it")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        _refuse(type(args).__name__, f"args must be a dict of keyword arguments for {name}(**args)", "args")
    try:
        args_json = json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as e:
        _refuse(name, f"the arguments of {name} must be JSON-serialisable (dict, list, str, int, float, bool, "
                      f"None): {e}", "args")
    if isinstance(packages, str):
        packages = [packages]
    return name, source, args_json, [str(p) for p in (packages or [])]
