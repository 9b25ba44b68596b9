"""The imports a fix leaves unused are removed as LibCST's `RemoveImportsVisitor` removes them,
judged from CPython's parse instead of LibCST's scopes (`jaxfix.fixes.unused_imports`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from jaxfix.fixes.unused_imports import names_in_use, remove_unused_imports

HEAD = """\
from __future__ import annotations

import os, sys  # the first two
from pkg import (
    alpha,  # first
    beta,
)
import x.y
import z as w

"""
USES = [
    "os.getcwd()",
    "alpha()",
    "beta()",
    "x.y.f()",
    "w()",
    "print(sys.argv)",
]
KEEPERS = {
    "none": "",
    "__all__": '__all__ = ["alpha", "w"]\n',
    "a string annotation": 'def g(v: "beta", u: "os.PathLike") -> "x.y.T": ...\n',
    "a cast": 'from typing import cast\n\nv = cast("sys.Foo", None)\n',
    "a docstring that names them all": '"""os, sys, alpha, beta, x.y and w."""\n',
}


def without(text: str, index: int) -> tuple[cst.Module, str, str]:
    """`text` without its statement `index`: as jaxfix removes the imports that statement
    used, and as LibCST does."""
    module = cst.parse_module(text)
    context = CodemodContext(wrapper=MetadataWrapper(module, unsafe_skip_copy=True))
    removed = module.body[index]
    RemoveImportsVisitor.remove_unused_import_by_node(context, removed)
    new = module.with_changes(body=[s for s in module.body if s is not removed])
    gone = names_in_use(module.code_for_node(removed)) - names_in_use(new.code)
    ours = remove_unused_imports(new, gone).code
    return new, ours, RemoveImportsVisitor(context).transform_module(new).code


@pytest.mark.parametrize("keeper", KEEPERS.values(), ids=KEEPERS.keys())
@pytest.mark.parametrize("used", range(len(USES)), ids=USES)
def test_the_same_imports_go_as_with_libcst_scopes(used: int, keeper: str) -> None:
    text = HEAD + "".join(f"{use}\n" for use in USES[: used + 1]) + keeper
    new, ours, libcst = without(text, len(cst.parse_module(HEAD).body) + used)
    assert ours == libcst
    if not keeper:
        assert ours != new.code, "the test removes an import the removed statement used"


COMMENTED = """\
from qq import (  # q
    gamma,  # g
    delta as d,  # d
    # about delta
    epsilon,
)
import p, q  # pq

"""


@pytest.mark.parametrize("use", ["gamma()", "d(p)", "q()", "epsilon()"])
def test_comments_around_a_removed_alias_stay_where_libcst_keeps_them(use: str) -> None:
    new, ours, libcst = without(COMMENTED + use + "\n", len(cst.parse_module(COMMENTED).body))
    assert ours == libcst
    assert ours != new.code, "the test removes an import the removed statement used"


def test_a_name_read_in_another_scope_keeps_its_import_where_libcst_would_remove_it() -> None:
    """Judged without scopes, a local of the same name counts as a use: an import too many is
    kept, never one too few."""
    text = textwrap.dedent("""\
        import os

        os.getcwd()


        def f():
            os = 1
            return os
        """)
    new, ours, libcst = without(text, 1)
    assert ours == new.code
    assert "import os" not in libcst
