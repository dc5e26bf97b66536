"""Per-language knowledge for tree-sitter: which nodes are declarations, and their names.

Each grammar comes from its own PyPI wheel (`tree-sitter-swift`, `tree-sitter-go`, ...),
which ships the compiled parser: nothing is downloaded at run time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

TSNode = Any  # tree_sitter.Node (the package is optional: imported only when parsing)
Resolver = Callable[[TSNode], "tuple[str, str] | None"]

# Declarations whose functions are methods, and whose members are chunked on their own.
TYPE_KINDS = frozenset(
    {
        "class",
        "struct",
        "enum",
        "union",
        "interface",
        "protocol",
        "trait",
        "impl",
        "extension",
        "actor",
        "record",
    }
)
_C_NAMES = frozenset(
    {
        "identifier",
        "field_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "type_identifier",
        "template_function",
    }
)
_GENERIC_ARGS = re.compile(r"<.*>", re.DOTALL)


def text_of(node: TSNode | None) -> str | None:
    """A node's source text (None for no node)."""
    if node is None:
        return None
    return node.text.decode("utf-8", "replace")


def _named(node: TSNode, kind: str) -> tuple[str, str] | None:
    """(kind, the node's `name` field) when it has a name."""
    name = text_of(node.child_by_field_name("name"))
    return (kind, name) if name else None


def _with_body(kind: str) -> Resolver:
    """A named declaration that only counts with a body (`struct s;` is a plain line)."""

    def resolve(node: TSNode) -> tuple[str, str] | None:
        return _named(node, kind) if node.child_by_field_name("body") is not None else None

    return resolve


def _swift_type(node: TSNode) -> tuple[str, str] | None:
    """Swift's class_declaration covers class, struct, enum, extension and actor."""
    keyword = text_of(node.child_by_field_name("declaration_kind")) or "class"
    return _named(node, keyword)


def _go_method(node: TSNode) -> tuple[str, str] | None:
    """Go methods are named `Receiver.Method`, wherever they sit in the file."""
    name = text_of(node.child_by_field_name("name"))
    receiver = node.child_by_field_name("receiver")
    types = [n for n in _walk(receiver) if n.type == "type_identifier"] if receiver else []
    if not name:
        return None
    return ("method", f"{text_of(types[0])}.{name}" if types else name)


def _go_type(node: TSNode) -> tuple[str, str] | None:
    """`type X struct {...}`: kind from the first spec's type (struct, interface, type)."""
    for spec in node.named_children:
        if spec.type in ("type_spec", "type_alias"):
            name = text_of(spec.child_by_field_name("name"))
            shape = spec.child_by_field_name("type")
            kind = {"struct_type": "struct", "interface_type": "interface"}.get(
                shape.type if shape is not None else "", "type"
            )
            return (kind, name) if name else None
    return None


def _rust_impl(node: TSNode) -> tuple[str, str] | None:
    """`impl [Trait for] Type`: named after the type, without generic arguments."""
    target = text_of(node.child_by_field_name("type"))
    return ("impl", _GENERIC_ARGS.sub("", target).strip()) if target else None


def c_declarator_name(node: TSNode) -> str | None:
    """The declared name inside C/C++ declarators (`*f(void)`, `&g()`, `A::b()`)."""
    current = node.child_by_field_name("declarator")
    for _ in range(16):
        if current is None:
            return None
        if current.type in _C_NAMES:
            return text_of(current)
        inner = current.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in current.named_children if c.type != "attribute"), None)
        current = inner
    return None


def _c_function(node: TSNode) -> tuple[str, str] | None:
    """C/C++ function definitions; `Type::method` defined out of class is a method."""
    name = c_declarator_name(node)
    if not name:
        return None
    if "::" in name:
        return ("method", _GENERIC_ARGS.sub("", name).replace("::", "."))
    return ("function", name)


_SPECIFIER_KINDS = {
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
    "class_specifier": "class",
}


def _c_typedef(node: TSNode) -> tuple[str, str] | None:
    """`typedef struct {...} name;` is the struct `name`; a plain typedef is not a chunk."""
    shape = node.child_by_field_name("type")
    if shape is None or shape.type not in _SPECIFIER_KINDS:
        return None
    if shape.child_by_field_name("body") is None:
        return None
    name = text_of(node.child_by_field_name("declarator"))
    return (_SPECIFIER_KINDS[shape.type], name) if name else None


_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)


def _js_binding(node: TSNode) -> tuple[str, str] | None:
    """`const f = () => ...` and `const C = class {...}`: a function or class named f/C."""
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) != 1:
        return None
    value = declarators[0].child_by_field_name("value")
    if value is None:
        return None
    kind = (
        "function"
        if value.type in _FUNCTION_VALUES
        else ("class" if value.type == "class" else None)
    )
    name = declarators[0].child_by_field_name("name")
    if kind is None or name is None or name.type != "identifier":
        return None
    return (kind, text_of(name))  # type: ignore[return-value]


def _walk(node: TSNode) -> list[TSNode]:
    """Every named descendant of a (small) node, depth first."""
    out = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(current.named_children))
    return out


@dataclass(frozen=True)
class Grammar:
    """What the chunker needs to know about one tree-sitter grammar.

    `decls` maps node types to their declaration kind ("function" becomes "method" inside a
    type); `resolvers` override how a node type's kind and name are read (None: not a
    declaration after all). `wrappers` enclose a declaration (`export`, `template<>`),
    `transparent` nodes hand their children to their parent (`#ifdef`, statement lists),
    and `prefixes` right before a declaration belong to it (doc comments, attributes).
    """

    module: str
    attribute: str
    decls: Mapping[str, str]
    resolvers: Mapping[str, Resolver] = field(default_factory=dict)
    wrappers: frozenset[str] = frozenset()
    transparent: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset({"comment"})
    unnamed_transparent: frozenset[str] = frozenset()  # e.g. C++ anonymous namespaces

    def resolve(self, node: TSNode) -> tuple[str, str] | None:
        """(kind, name) when `node` is a declaration this chunker cuts out, else None."""
        kind = self.decls.get(node.type)
        if kind is None:
            return None
        resolver = self.resolvers.get(node.type)
        return resolver(node) if resolver is not None else _named(node, kind)


_JS_DECLS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "function",
    "lexical_declaration": "function",
    "variable_declaration": "function",
}
_JS_RESOLVERS: dict[str, Resolver] = {
    "lexical_declaration": _js_binding,
    "variable_declaration": _js_binding,
}
_TS_DECLS = {
    **_JS_DECLS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "enum_declaration": "enum",
    "type_alias_declaration": "type",
    "internal_module": "namespace",
    "module": "namespace",
}
_TS_WRAPPERS = frozenset({"export_statement", "ambient_declaration", "expression_statement"})
_C_DECLS = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
    "type_definition": "struct",
}
_C_RESOLVERS: dict[str, Resolver] = {
    "function_definition": _c_function,
    "struct_specifier": _with_body("struct"),
    "union_specifier": _with_body("union"),
    "enum_specifier": _with_body("enum"),
    "type_definition": _c_typedef,
}
_C_TRANSPARENT = frozenset(
    {
        "preproc_ifdef",
        "preproc_if",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "linkage_specification",
        "declaration_list",
    }
)

GRAMMARS: dict[str, Grammar] = {
    "swift": Grammar(
        "tree_sitter_swift",
        "language",
        {
            "class_declaration": "class",
            "protocol_declaration": "protocol",
            "function_declaration": "function",
            "protocol_function_declaration": "function",
            "init_declaration": "constructor",
            "deinit_declaration": "destructor",
            "subscript_declaration": "function",
        },
        resolvers={
            "class_declaration": _swift_type,
            "init_declaration": lambda n: ("constructor", "init"),
            "deinit_declaration": lambda n: ("destructor", "deinit"),
            "subscript_declaration": lambda n: ("function", "subscript"),
        },
        transparent=frozenset({"statements"}),
        prefixes=frozenset({"comment", "multiline_comment"}),
    ),
    "javascript": Grammar(
        "tree_sitter_javascript",
        "language",
        _JS_DECLS,
        _JS_RESOLVERS,
        wrappers=frozenset({"export_statement"}),
    ),
    "typescript": Grammar(
        "tree_sitter_typescript",
        "language_typescript",
        _TS_DECLS,
        _JS_RESOLVERS,
        wrappers=_TS_WRAPPERS,
    ),
    "tsx": Grammar(
        "tree_sitter_typescript",
        "language_tsx",
        _TS_DECLS,
        _JS_RESOLVERS,
        wrappers=_TS_WRAPPERS,
    ),
    "go": Grammar(
        "tree_sitter_go",
        "language",
        {
            "function_declaration": "function",
            "method_declaration": "method",
            "type_declaration": "type",
        },
        resolvers={"method_declaration": _go_method, "type_declaration": _go_type},
        transparent=frozenset({"statement_list"}),
    ),
    "rust": Grammar(
        "tree_sitter_rust",
        "language",
        {
            "function_item": "function",
            "struct_item": "struct",
            "enum_item": "enum",
            "union_item": "union",
            "trait_item": "trait",
            "impl_item": "impl",
            "mod_item": "namespace",
            "macro_definition": "macro",
        },
        resolvers={"impl_item": _rust_impl, "mod_item": _with_body("namespace")},
        prefixes=frozenset({"line_comment", "block_comment", "attribute_item"}),
    ),
    "java": Grammar(
        "tree_sitter_java",
        "language",
        {
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "record_declaration": "record",
            "annotation_type_declaration": "interface",
            "method_declaration": "method",
            "constructor_declaration": "constructor",
        },
        transparent=frozenset({"enum_body_declarations"}),
        prefixes=frozenset({"line_comment", "block_comment"}),
    ),
    "c": Grammar(
        "tree_sitter_c",
        "language",
        _C_DECLS,
        _C_RESOLVERS,
        transparent=_C_TRANSPARENT,
    ),
    "cpp": Grammar(
        "tree_sitter_cpp",
        "language",
        {**_C_DECLS, "class_specifier": "class", "namespace_definition": "namespace"},
        {**_C_RESOLVERS, "class_specifier": _with_body("class")},
        wrappers=frozenset({"template_declaration", "field_declaration"}),
        transparent=_C_TRANSPARENT,
        unnamed_transparent=frozenset({"namespace_definition"}),
    ),
}
