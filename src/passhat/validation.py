"""Reading the YAML users give us safely, and turning YAML and pydantic errors into "file: field: what is
wrong" messages, the same way everywhere."""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import ValidationError

MAX_ALIAS_NODES = 1_000_000
"""How many nodes aliases may add to a YAML document. PyYAML shares an aliased node instead of copying
it, so a "billion laughs" file (nine levels of ten aliases each) loads in microseconds, and then
whatever walks the result — validation, hashing, JSON — expands it to 10⁹ values and gigabytes. A
real file that reuses an anchor adds a few hundred nodes."""


def field_path(loc: tuple[Any, ...]) -> str:
    """``("rules", 2, "k")`` → ``rules.2.k`` (``(root)`` for the whole document)."""
    return ".".join(str(p) for p in loc) or "(root)"


class YamlExpansionError(yaml.MarkedYAMLError):
    """A YAML document whose aliases expand too far (or into themselves); names the field it happens under."""

    def __init__(self, field: str, mark: Any, problem: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.field = field


MAX_DEPTH = 200
"""How deeply collections may nest in a YAML document. libyaml composes nodes recursively in C, where
a document of 100,000 nested ``[`` overflows the stack and kills the process (no ``RecursionError`` to
catch), so the depth is measured on the parser's events first. Real files nest fewer than ten levels."""

FastLoader: Any = getattr(yaml, "CSafeLoader", None)
"""PyYAML's libyaml-based safe loader when PyYAML was built with it: about 5 times faster on case files
and fixtures, with the same results; ``None`` without libyaml (then the pure-Python loader is used)."""


FastDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""PyYAML's libyaml-based safe dumper when PyYAML was built with it, else the pure-Python one. The case
files passhat writes (``shadow``, ``cases import``, ``cases from-failure``) hold whole conversations: the
pure-Python emitter took 10 s of CPU for one 1 MB message, libyaml a small fraction of that."""


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump(data, **options)`` with libyaml when available (the same document, read back)."""
    return yaml.dump(data, Dumper=FastDumper, **options)  # type: ignore[no-any-return]


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses alias bombs, recursive aliases and runaway nesting before building
    anything, with libyaml when available.

    The document is composed into nodes first (aliases are shared there, so this is cheap); the nodes
    are counted as if every alias were copied (each shared node counted once, then multiplied by its
    uses), and the document is rejected when aliases would add more than ``MAX_ALIAS_NODES``. Raises
    ``yaml.YAMLError`` (a :class:`YamlExpansionError` for these), like ``safe_load``.
    """
    if FastLoader is not None:
        _check_depth(text, FastLoader)
        loader = FastLoader(text)
    else:
        loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:  # the pure-Python composer recurses per level
            raise YamlExpansionError("", None, "the document is nested too deeply") from None
        if node is None:
            return None
        if "*" in text:  # an alias is always written *NAME: without one nothing is shared, nothing can expand or recur
            _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_depth(text: str, loader_class: Any) -> None:
    """Refuse a document nested deeper than ``MAX_DEPTH``, reading only the parser's events (iterative)."""
    loader = loader_class(text)
    depth = 0
    opening = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    closing = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, opening):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YamlExpansionError("", event.start_mark,
                                             f"the document is nested too deeply (more than {MAX_DEPTH} levels)")
            elif isinstance(event, closing):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # libyaml ≥ 0.2.6 (PyYAML 6.0.4 wheels) has a nesting limit of its own, met by its scanner before
        # this loop sees our limit: the same refusal, said the same way
        if "nesting depth" not in str(exc.problem or ""):
            raise
        raise YamlExpansionError("", exc.problem_mark,
                                 f"the document is nested too deeply (more than {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[tuple[str, yaml.Node]]:
    """(field name, child) pairs: keys and values of a mapping, items of a sequence."""
    if isinstance(node, yaml.MappingNode):
        out = []
        for k, v in node.value:
            name = str(k.value) if isinstance(k, yaml.ScalarNode) else "?"
            out += [(name, k), (name, v)]
        return out
    if isinstance(node, yaml.SequenceNode):
        return [(str(i), child) for i, child in enumerate(node.value)]
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes ``root`` expands to, without expanding it (iterative: no recursion limit)."""
    size: dict[int, int] = {}
    uses: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = [c for _, c in _children(node)]
            size[key] = 1 + sum(size[id(c)] for c in children)
            for c in children:
                uses[id(c)] = uses.get(id(c), 0) + 1
            continue
        if key in size:
            continue
        if key in on_path:
            raise YamlExpansionError(_path_to(root, node), node.start_mark, "an alias refers to the node that contains it")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for _, c in _children(node) if id(c) not in size)
    if size[id(root)] - len(size) > MAX_ALIAS_NODES:
        field, node = _where_it_expands(root, size, uses)
        raise YamlExpansionError(field, node.start_mark,
                                 f"aliases expand this document to {size[id(root)]:,} nodes (it writes {len(size):,}); "
                                 f"at most {MAX_ALIAS_NODES:,} may come from aliases (a YAML alias bomb?)")


def _where_it_expands(root: yaml.Node, size: dict[int, int], uses: dict[int, int]) -> tuple[str, yaml.Node]:
    """The field whose own value (not an alias) holds the aliases that expand past the limit."""
    path: list[str] = []
    node = root
    while True:
        big = [(name, c) for name, c in _children(node) if size[id(c)] > MAX_ALIAS_NODES and uses.get(id(c), 0) == 1]
        if not big:
            return ".".join(path) or "(root)", node
        name, node = max(big, key=lambda nc: size[id(nc[1])])
        path.append(name)


def _path_to(root: yaml.Node, target: yaml.Node) -> str:
    """The field path of ``target`` (first found, depth first), for messages."""
    stack: list[tuple[yaml.Node, list[str]]] = [(root, [])]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return ".".join(path) or "(root)"
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend((c, [*path, name]) for name, c in _children(node))
    return ""


def yaml_problem(exc: Exception) -> tuple[str, str]:
    """(where, message) for a YAML error: the field when known, then line and column when PyYAML knows them.

    A character YAML does not allow (a control character, bytes that are not UTF-8) is a ``ReaderError``,
    which has no mark but a position, and a two-line message of which the second names ``<unicode string>``.
    """
    if isinstance(exc, yaml.reader.ReaderError):
        return f"character {exc.position + 1}", f"invalid YAML: {str(exc).splitlines()[0]}"
    mark = getattr(exc, "problem_mark", None)
    line = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    field = getattr(exc, "field", "")
    where = f"{field} ({line})" if field and line else field or line
    return where, f"invalid YAML: {getattr(exc, 'problem', None) or exc}"


def first_problem(exc: ValidationError) -> tuple[dict[str, Any], str, str]:
    """The first validation error, its field path, and a " (and N more problem(s))" suffix."""
    errors = exc.errors()
    first = dict(errors[0])
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return first, field_path(errors[0]["loc"]), more
