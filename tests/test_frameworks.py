"""The traced-context analysis knows the transforms of the JAX frameworks: Equinox, Flax linen
and NNX, Haiku, `checkify` and `jax.named_call`.

Source strings checked with every rule (with and without the first pass's slicing, which must
agree): each positive case beside a look-alike that must stay silent. These prove the analysis;
the runtime proofs are fixtures (`*/equinox_*`, `*/nnx_*`, `*/haiku_*`)."""

from __future__ import annotations

import textwrap

import pytest

from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text

RULES = all_rules()


def codes(source: str) -> list[str]:
    """The codes reported in `source`, identical with and without slicing."""
    text = textwrap.dedent(source)
    sliced = [d.code for d in check_text(text, RULES)]
    whole = [d.code for d in check_text(text, RULES, slicing=False)]
    assert sliced == whole
    return sliced


POSITIVE = {
    "optax_stateless_update": """\
        import pickle
        import optax

        def scale(updates, params):
            pickle.dumps(updates)
            return updates

        opt = optax.stateless(scale)
        """,
    "eqx_module_call_vmapped_instance": """\
        import pickle
        import equinox as eqx
        import jax

        class Probe(eqx.Module):
            def __call__(self, x):
                pickle.dumps(x)
                return x

        probe = Probe()
        rows = jax.vmap(probe)
        """,
    "eqx_filter_jit_pickle": """\
        import pickle
        import equinox as eqx

        @eqx.filter_jit
        def step(model, x):
            blob = pickle.dumps(x)
            return model(x), blob
        """,
    "eqx_filter_grad_pickle_first_arg": """\
        import pickle
        import equinox as eqx

        def loss(model, x):
            pickle.dumps(model)
            return 0.0

        grads = eqx.filter_grad(loss)
        """,
    "eqx_filter_vmap_cache": """\
        import functools
        import equinox as eqx

        @functools.lru_cache
        def table(k):
            return k

        @eqx.filter_vmap
        def row(x):
            return table(x)
        """,
    "linen_scan_body_pickle": """\
        import pickle
        import flax.linen as nn

        def body(module, carry, x):
            pickle.dumps(carry)
            return carry, x

        Scanned = nn.scan(body, variable_broadcast="params", split_rngs={"params": False})
        """,
    "nnx_jit_cache": """\
        import functools
        from flax import nnx

        @functools.cache
        def lookup(x):
            return x

        @nnx.jit
        def train_step(model, batch):
            return lookup(batch)
        """,
    "nnx_grad_pickle": """\
        import pickle
        from flax import nnx

        def loss_fn(model, x):
            pickle.dumps(model)
            return 0.0

        grad_fn = nnx.grad(loss_fn)
        """,
    "haiku_transform_pickle": """\
        import pickle
        import haiku as hk

        def forward(x):
            pickle.dumps(x)
            return hk.nets.MLP([4])(x)

        model = hk.transform(forward)
        """,
    "haiku_scan_pickle": """\
        import pickle
        import haiku as hk

        def net(xs):
            def body(c, x):
                pickle.dumps(c)
                return c, x
            return hk.scan(body, 0.0, xs)
        """,
    "checkify_pickle": """\
        import pickle
        from jax.experimental import checkify

        def f(x):
            pickle.dumps(x)
            return x

        checked = checkify.checkify(f)
        """,
    "named_call_in_jit": """\
        import pickle
        import jax

        def layer(x):
            pickle.dumps(x)
            return x

        @jax.jit
        def model(x):
            return jax.named_call(layer, name="layer")(x)
        """,
    "linen_compact_call_pickle": """\
        import pickle
        from flax import linen as nn

        class Block(nn.Module):
            features: int

            @nn.compact
            def __call__(self, x):
                pickle.dumps(x)
                return nn.Dense(self.features)(x)
        """,
    "haiku_module_cache": """\
        import functools
        import haiku as hk

        @functools.lru_cache
        def scale(x):
            return x

        class Head(hk.Module):
            def __call__(self, x):
                return scale(x)
        """,
}

NEGATIVE = {
    "optax_init_fn_runs_eagerly": """\
        import pickle
        import optax

        def make():
            def init_fn(params):
                pickle.dumps(params)
                return optax.EmptyState()

            def update_fn(updates, state, params=None):
                return updates, state

            return optax.GradientTransformation(init_fn, update_fn)
        """,
    "eqx_module_call_only_eager": """\
        import pickle
        import equinox as eqx
        import jax

        class Probe(eqx.Module):
            def __call__(self, x):
                pickle.dumps(x)
                return x

        @eqx.filter_jit
        def step(x):
            return x + 1

        def eager(probe: Probe, x):
            return probe(step(x))
        """,
    # A parameter annotated with a Python type, or defaulting to a literal, is static.
    "eqx_filter_jit_static_int": """\
        import functools
        import equinox as eqx

        @functools.lru_cache
        def table(n):
            return list(range(n))

        @eqx.filter_jit
        def step(x, n: int, scale=2):
            return x, table(n), table(scale)
        """,
    # filter_grad traces only the first argument.
    "eqx_filter_grad_second_arg": """\
        import pickle
        import equinox as eqx

        def loss(model, config):
            pickle.dumps(config)
            return 0.0

        grads = eqx.filter_grad(loss)
        """,
    # The module a linen lifted transform passes first is not data.
    "linen_scan_module_param": """\
        import pickle
        import flax.linen as nn

        def body(module, carry, x):
            pickle.dumps(module.name)
            return carry, x

        Scanned = nn.scan(body, variable_broadcast="params")
        """,
    # `equinox` imported as something else, and a local look-alike named `filter_jit`.
    "not_equinox": """\
        import pickle
        import numpy as eqx

        def filter_jit(f):
            return f

        @eqx.filter_jit
        def a(x):
            return pickle.dumps(x)

        @filter_jit
        def b(x):
            return pickle.dumps(x)
        """,
    # Not under a trace: named_call outside traced code calls f eagerly.
    "named_call_on_host": """\
        import pickle
        import jax

        def layer(x):
            pickle.dumps(x)
            return x

        out = jax.named_call(layer, name="layer")(1.0)
        """,
    # nnx.jit with a static argument.
    "nnx_jit_static": """\
        import functools
        from flax import nnx

        @functools.cache
        def lookup(n):
            return n

        @functools.partial(nnx.jit, static_argnums=1)
        def step(model, n):
            return lookup(n)
        """,
    # Python-valued inputs of a linen method, and a class that is no framework module.
    "linen_python_inputs_and_plain_class": """\
        import functools
        import pickle
        import flax.linen as nn

        @functools.lru_cache
        def rate(train):
            return 0.1 if train else 0.0

        class Block(nn.Module):
            @nn.compact
            def __call__(self, x, train: bool = False, mask=None):
                return x * rate(train) * rate(mask)

        class Plain:
            def __call__(self, x):
                return pickle.dumps(x)
        """,
}


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_framework_transform_traces(name: str) -> None:
    assert codes(POSITIVE[name]) != []


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_framework_look_alike_is_silent(name: str) -> None:
    assert codes(NEGATIVE[name]) == []
