"""JF106's fixes: a memo dict (module-level or an object's own) in JAX code is dropped only where
that means the same, and a hashed seed is folded into a key (the fixtures
`module_memo_dict_dropped`, `method_memo_dict_dropped`, `hash_seed_key_fold_in` and
`seed_through_a_name_vmap` prove the rewrites under jax)."""

from __future__ import annotations

import pytest

from jaxfix.rules.registry import find_rule
from jaxfix.run.engine import check_text, fix_text

RULE = find_rule("JF106")
MEMO = """\
import jax
import jax.numpy as jnp

_CACHE = {made}


def expensive(x):
    if x in _CACHE:
        return _CACHE[x]
    y = {computed}
    _CACHE[x] = y
    return y


@jax.jit
def f(x):
    return expensive(x) + 1
{elsewhere}"""


@pytest.mark.parametrize(
    ("made", "computed", "elsewhere", "fixed"),
    [
        pytest.param("{}", "jnp.sin(x) * 2", "", True, id="a JAX helper's own memo"),
        pytest.param("dict()", "jnp.sin(x) * 2", "", True, id="made by dict()"),
        pytest.param("{0: 1.0}", "jnp.sin(x) * 2", "", False, id="prefilled"),
        pytest.param("{}", "jnp.sin(x) * 2", "\nprint(len(_CACHE))\n", False, id="read elsewhere"),
        pytest.param("{}", "float(jnp.sin(x))", "", False, id="host work in the rest"),
        pytest.param("{}", "print(x) or x", "", False, id="a print in the rest"),
    ],
)
def test_a_memo_dict_is_dropped_only_where_that_means_the_same(
    made: str, computed: str, elsewhere: str, fixed: bool
) -> None:
    assert RULE is not None
    text = MEMO.format(made=made, computed=computed, elsewhere=elsewhere)
    found = check_text(text, [RULE])
    # One finding for the memo dict: its lookup and store are its related places.
    assert [len(d.related) for d in found] == [2]
    assert {d.fix_title is not None for d in found} == {fixed}
    assert found == check_text(text, [RULE], slicing=False)


SEEDED = """\
import jax
{imports}


@jax.jit
def f(x, step):
    key = {key}
    return x + jax.random.uniform(key)
"""


@pytest.mark.parametrize(
    ("imports", "key", "folded"),
    [
        pytest.param(
            "",
            "jax.random.PRNGKey(hash(step) & 0xFFFF)",
            "jax.random.fold_in(jax.random.PRNGKey(0), step)",
            id="masked",
        ),
        pytest.param(
            "from jax.random import key as make_key",
            "make_key(hash(step))",
            "jax.random.fold_in(make_key(0), step)",
            id="maker imported by name",
        ),
        pytest.param("", "jax.random.PRNGKey(hash(step) + 1)", None, id="shifted"),
        pytest.param(
            "",
            "jax.random.PRNGKey(seed=hash(step))",
            "jax.random.fold_in(jax.random.PRNGKey(0), step)",
            id="a keyword seed",
        ),
        pytest.param("", 'jax.random.key(hash(step), impl="rbg")', None, id="another argument"),
        pytest.param("import numpy as np", "np.random.seed(hash(step))", None, id="host seed"),
    ],
)
def test_a_hashed_seed_folds_the_value_into_a_key_only_from_a_jax_key_maker(
    imports: str, key: str, folded: str | None
) -> None:
    assert RULE is not None
    text = SEEDED.format(imports=imports, key=key)
    [found] = check_text(text, [RULE])
    assert "hashes the traced `step`" in found.message
    fixed = fix_text(text, [RULE], unsafe_fixes=True).text
    if folded:
        assert f"    key = {folded}\n" in fixed
        assert check_text(fixed, [RULE]) == []
    else:
        assert fixed == text


OWN_MEMO = """\
import jax
import jax.numpy as jnp


class Model:
    def __init__(self):
        self.scale = 2.0
        self._memo = {made}

    def apply(self, x):
        if x in self._memo:
            return self._memo[x]
        y = jnp.sin(x) * self.scale
        self._memo[x] = y
        return y
{methods}

model = Model()


@jax.jit
def f(x):
    return model.apply(x) + 1
{elsewhere}"""


@pytest.mark.parametrize(
    ("made", "methods", "elsewhere", "fixed"),
    [
        pytest.param("{}", "", "", True, id="an object's own memo"),
        pytest.param(
            "{}", "\n    def reset(self):\n        self._memo = {}\n", "", True, id="reset empty"
        ),
        pytest.param("{0: 1.0}", "", "", False, id="prefilled"),
        pytest.param(
            "{}", "\n    def reset(self):\n        self._memo.clear()\n", "", False, id="cleared"
        ),
        pytest.param(
            "{}", "\n    def load(self):\n        self._memo = {1: 2.0}\n", "", False, id="refilled"
        ),
        pytest.param("{}", "", "\nprint(len(model._memo))\n", False, id="read elsewhere"),
        pytest.param("{}", "", '\nprint(getattr(model, "_memo"))\n', False, id="getattr"),
        pytest.param("{}", "", "\nprint(model.apply(1.0))\n", False, id="called eagerly"),
        pytest.param(
            "{}", "", "\n\ndef main():\n    return model.apply(1.0)\n", False, id="host caller"
        ),
        pytest.param("{}", "", "\ng = jax.vmap(model.apply)\n", True, id="handed to jax"),
    ],
)
def test_an_instance_memo_dict_is_dropped_only_where_nothing_else_reads_it(
    made: str, methods: str, elsewhere: str, fixed: bool
) -> None:
    assert RULE is not None
    text = OWN_MEMO.format(made=made, methods=methods, elsewhere=elsewhere)
    found = check_text(text, [RULE])
    # One finding for the memo dict: its lookup and store are its related places.
    assert [len(d.related) for d in found] == [2]
    assert {d.fix_title is not None for d in found} == {fixed}
    assert found == check_text(text, [RULE], slicing=False)
    if fixed:
        result = fix_text(text, [RULE], unsafe_fixes=True).text
        assert "_memo" not in result
        assert "y = jnp.sin(x) * self.scale\n        return y\n" in result
        assert check_text(result, [RULE]) == []


NAMED_SEED = """\
import jax


@jax.jit
def f(x, step):
    seed = hash(step) % 2**31
{between}    key = jax.random.PRNGKey(seed)
    return x + jax.random.uniform(key){after}
"""


@pytest.mark.parametrize(
    ("between", "after", "fixed"),
    [
        pytest.param("", "", True, id="read once"),
        pytest.param("    step = step + 1\n", "", True, id="the value rebound after"),
        pytest.param("", " + seed", False, id="read twice"),
        pytest.param("    seed = seed + 1\n", "", False, id="rebound"),
    ],
)
def test_a_seed_hashed_into_a_name_folds_the_value_where_the_name_is_read_once(
    between: str, after: str, fixed: bool
) -> None:
    assert RULE is not None
    text = NAMED_SEED.format(between=between, after=after)
    [found] = check_text(text, [RULE])
    assert found.fix_title is not None if fixed else found.fix_title is None
    result = fix_text(text, [RULE], unsafe_fixes=True).text
    if fixed:
        assert "    seed = step\n" in result
        assert "    key = jax.random.fold_in(jax.random.PRNGKey(0), seed)\n" in result
        assert check_text(result, [RULE]) == []
    else:
        assert result == text
