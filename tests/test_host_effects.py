"""A hoist into a host callback races with nothing: the host waits with `jax.effects_barrier()`
before it reads what the callback writes, statements that use that move with it, and where
neither can be done there is no fix (`jaxfix.fixes.host_effects`, `jaxfix.analysis.effects`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxfix.rules.registry import all_rules
from jaxfix.run.engine import check_text, fix_text

RULES = all_rules()

STORE = """\
import jax
import jax.numpy as jnp

LAST = None


@jax.jit
def step(x):
    global LAST
    LAST = x * 2
    return x + 1

"""


def fixed(host: str, traced: str = STORE) -> str:
    return fix_text(traced + textwrap.dedent(host), RULES, unsafe_fixes=True).text


def host_part(text: str) -> str:
    return text.split("return x + 1\n", 1)[1].strip()


def only_finding(host: str, traced: str = STORE) -> tuple[str | None, str]:
    """The fix title and message of the one finding in `traced` followed by `host`."""
    (found,) = check_text(traced + textwrap.dedent(host), RULES)
    return found.fix_title, found.full_message


SAVE = """\
import os
import pickle
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


@partial(jax.jit, static_argnames="path")
def save(x, path):
    pickle.dump(x * 2, open(path, "wb"))
    return x + 1

"""


def test_the_host_waits_after_a_loop_of_calls_not_in_it() -> None:
    host = """\
        y = jnp.ones(2)
        for _ in range(3):
            y = step(y)
        print(LAST)
        """
    assert host_part(fixed(host)) == textwrap.dedent("""\
        y = jnp.ones(2)
        for _ in range(3):
            y = step(y)
        jax.effects_barrier()
        print(LAST)""")


def test_a_read_at_the_top_of_the_loop_waits_for_the_last_iteration() -> None:
    host = """\
        y = jnp.ones(2)
        for _ in range(3):
            print(LAST)
            y = step(y)
        """
    assert "    jax.effects_barrier()\n    print(LAST)\n    y = step(y)" in fixed(host)


def test_a_function_that_reads_after_callers_that_call_waits_inside() -> None:
    host = """\
        def report():
            print(LAST)


        step(jnp.ones(2))
        report()
        """
    assert "def report():\n    jax.effects_barrier()\n    print(LAST)" in fixed(host)


def test_a_function_called_only_before_any_call_does_not_wait() -> None:
    host = """\
        def reset():
            global LAST
            LAST = None


        reset()
        step(jnp.ones(2))
        """
    text = fixed(host)
    assert "effects_barrier" not in text
    title, _ = only_finding(host)
    assert title == "Move the statement to a host callback (`jax.debug.callback`)"


def test_a_function_that_only_calls_on_hands_its_callers_state_on() -> None:
    """`relay` neither runs the trace nor reads: it is not scanned, but the callback may be
    pending when it calls `report`, which must wait although its other call site is synced."""
    host = """\
        def report():
            print(LAST)


        def relay():
            report()


        report()
        step(jnp.ones(2))
        relay()
        """
    assert "def report():\n    jax.effects_barrier()\n    print(LAST)" in fixed(host)


def test_the_title_says_where_the_host_waits() -> None:
    title, _ = only_finding("step(jnp.ones(2))\nprint(LAST)\n")
    assert title is not None
    assert title.endswith(", with `jax.effects_barrier()` before the read at line 14")


def test_a_barrier_already_there_is_kept_and_not_doubled() -> None:
    text = fixed("step(jnp.ones(2))\njax.effects_barrier()\nprint(LAST)\n")
    assert text.count("effects_barrier()") == 1


def test_a_read_in_the_statement_that_runs_the_trace_gets_no_fix() -> None:
    title, message = only_finding("print(step(jnp.ones(2)), LAST)\n")
    assert title is None
    assert "host code reads what it writes at line 13 in the statement that runs" in message


LOGS = """\
import logging

import jax
import jax.numpy as jnp

logger = logging.getLogger(__name__)


@jax.jit
def step(x):
    logger.info("x %s", x * 2)
    return x + 1

"""


@pytest.mark.parametrize(
    ("traced", "line", "waits"),
    [
        (LOGS, 'print("done")', True),
        (LOGS, 'logging.getLogger("main").warning("done")', True),
        (LOGS, "sys.stdout.write('done')", True),
        (LOGS, 'print("done", file=open("out.txt", "w"))', False),
        (LOGS, "catalog = dict(done=1)", False),
        (STORE, 'print("done")', False),  # its callback writes `LAST`, not the console
    ],
    ids=["print", "logger", "stream", "print-to-a-file", "no-output", "callback-prints-nothing"],
)
def test_a_line_written_to_the_console_waits_for_the_lines_a_callback_logs(
    traced: str, line: str, waits: bool
) -> None:
    """A callback that logs writes to the console when the computation runs: a line the host
    writes there after the call comes after its lines only once the host has waited."""
    text = fixed(f"y = step(jnp.ones(2))\nz = y + 1\n{line}\n", traced)
    assert "jax.debug.callback(" in text
    barrier = f"z = y + 1\njax.effects_barrier()\n{line}\n"
    assert (barrier in text) is waits
    assert text.count("jax.effects_barrier()") == waits


def test_a_line_printed_by_the_statement_that_runs_a_logging_callback_gets_no_fix() -> None:
    title, message = only_finding('print("y", step(jnp.ones(2)))\n', LOGS)
    assert title is None
    assert "in the statement that runs the traced code" in message


def test_a_file_whose_name_a_call_site_gives_is_waited_for_where_it_is_opened() -> None:
    host = """\
        save(jnp.ones(2), "a.pkl")
        n = 3
        print(open("a.pkl", "rb").read()[:1])
        """
    assert 'n = 3\njax.effects_barrier()\nprint(open("a.pkl"' in fixed(host, SAVE)


def test_a_file_name_from_a_caller_the_file_does_not_show_gets_no_fix() -> None:
    title, message = only_finding("", SAVE)
    assert title is None
    assert "what it writes depends on a call site that the file does not show" in message


def test_a_later_statement_that_uses_the_file_and_cannot_move_blocks_the_fix() -> None:
    traced = SAVE.replace(
        "    return x + 1", "    size = os.path.getsize(path)\n    return x * size"
    )
    title, message = only_finding('save(jnp.ones(2), path="x.pkl")\n', traced)
    assert title is None
    assert "`size = os.path.getsize(path)` uses what it writes and cannot move with it" in message


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("step(jnp.ones(2))\n", id="nothing reads it"),
        pytest.param("print(LAST)\nstep(jnp.ones(2))\n", id="read only before the call"),
    ],
)
def test_no_read_after_a_call_needs_no_barrier(host: str) -> None:
    assert "effects_barrier" not in fixed(host)


@pytest.mark.parametrize(
    "host",
    [
        pytest.param(
            "def report():\n    print(LAST)\n\n\nstep(jnp.ones(2))\nreport()\n", id="reader"
        ),
        pytest.param(
            "def main():\n    step(jnp.ones(2))\n    print(LAST)\n\n\nmain()\n", id="caller"
        ),
        pytest.param("run = step\nrun(jnp.ones(2))\nprint(LAST)\n", id="alias"),
        pytest.param("step(jnp.ones(2))\nprint(HISTORY)\n", id="module-level list"),
        pytest.param(
            'def restore():\n    return open("ckpt.pkl", "rb").read()\n', id="an unused reader"
        ),
    ],
)
def test_the_sliced_check_offers_the_fix_the_whole_file_gives(host: str) -> None:
    """LibCST sees a slice of the file: the module's code and what uses it are in it; when the
    host code that must wait is not (a function nothing in the file calls reads the file the
    callback writes), the rules run on the whole file."""
    traced = "LAST = x * 2\n    HISTORY.append(x)\n    pickle.dump(x, open('ckpt.pkl', 'wb'))"
    text = "import pickle\n" + STORE.replace("LAST = x * 2", traced) + host
    text = text.replace("LAST = None", "LAST = None\nHISTORY = []")
    sliced = [(d.message, d.fix_title) for d in check_text(text, RULES)]
    assert sliced == [(d.message, d.fix_title) for d in check_text(text, RULES, slicing=False)]
    assert any(title is not None and "effects_barrier" in title for _, title in sliced)


def test_a_lambda_that_calls_the_traced_function_runs_it() -> None:
    host = "jax.vmap(lambda v: step(v))(jnp.ones((2, 2)))\nprint(LAST)\n"
    assert host_part(fixed(host)).endswith("jax.effects_barrier()\nprint(LAST)")


def test_a_lambda_whose_parameter_is_named_like_the_traced_function_does_not_run_it() -> None:
    host = "list(map(lambda step: print(step), [1]))\nprint(LAST)\n"
    assert "effects_barrier" not in fixed(host)


SHARDED_STEP = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    LOSSES = []


    @jax.jit
    def _step(x):
        loss = jnp.mean(x**2)
        LOSSES.append(float(loss))
        return x * 0.5


    mesh = jax.make_mesh((4,), ("d",))
    x = jax.device_put(jnp.arange(8.0), NamedSharding(mesh, PartitionSpec("d")))
    for _ in range(2):
        x = jax.block_until_ready(_step(x))
    print(len(LOSSES), [round(v, 4) for v in LOSSES])
    """)


def test_a_module_that_shards_gets_unordered_callbacks() -> None:
    """JAX refuses ordered effects over several devices: where the file shows a mesh, the
    callback is unordered (the barrier still orders the read)."""
    fixed = fix_text(SHARDED_STEP, RULES, unsafe_fixes=True).text
    assert "jax.debug.callback(_host_append, loss)\n" in fixed
    assert "jax.effects_barrier()\nprint(len(LOSSES)" in fixed
    single = fix_text(SHARDED_STEP.split("\n\nmesh")[0] + "\n", RULES, unsafe_fixes=True).text
    assert "ordered=True" in single  # nothing there runs over several devices


@pytest.mark.jax
def test_the_unordered_callback_runs_over_four_devices(tmp_path: Path) -> None:
    """The fixed program runs over four (host) devices as its concrete run does; ordered, it
    would raise `ValueError: The following ordered effects are not supported for more than 1
    device`."""
    fixed = fix_text(SHARDED_STEP, RULES, unsafe_fixes=True).text
    ordered = fixed.replace("_host_append, loss)", "_host_append, loss, ordered=True)")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    runs = []
    for name, text in (("fixed.py", fixed), ("ordered.py", ordered)):
        (tmp_path / name).write_text(text)
        runs.append(
            subprocess.run(
                [sys.executable, name], cwd=tmp_path, env=env, capture_output=True, text=True
            )
        )
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout == "2 [17.5, 4.375]\n"
    assert "ordered effects are not supported for more than 1 device" in runs[1].stderr


GRADS = textwrap.dedent("""\
    import pickle

    import jax

    LOG = []


    @jax.jit
    def step(params, x):
        grads = jax.grad(lambda p: (p["w"] * x).sum())(params)
        LOG.append({sent})
        return params
    """)


@pytest.mark.parametrize(
    ("sent", "given"),
    [
        ('pickle.dumps(grads["w"])', 'grads["w"]'),  # one leaf: that leaf alone
        ('(pickle.dumps(grads["w"]), grads["b"][0])', 'grads["w"], grads["b"][0]'),
        ("pickle.dumps(grads)", "grads"),  # the whole tree: all of it
        ('pickle.dumps(grads["w"]), pickle.dumps(grads)', "grads"),
        ("pickle.dumps(grads.get('w'))", "grads"),  # a method needs its receiver
    ],
)
def test_the_callback_is_given_only_what_the_statement_reads(sent: str, given: str) -> None:
    fixed = fix_text(GRADS.format(sent=sent), RULES, unsafe_fixes=True).text
    assert re.search(rf"jax\.debug\.callback\(_host_\w+, {re.escape(given)}, ordered=True\)", fixed)


def test_a_dict_keeps_its_key_order() -> None:
    """`jax.debug.print` and a host callback flatten a dict as a tree, its keys sorted: a
    print of a dict is not rewritten to `jax.debug.print`, and a dict whose keys are out of
    sorted order is not handed to a callback (found by `scripts/fuzz_effects.py`)."""
    source = textwrap.dedent("""\
        import logging

        import jax

        log = logging.getLogger("x")


        @jax.jit
        def step(x):
            print({"h": x, "g": x})
            d = {"h": x, "g": x * 2}
            log.warning("%s", d)
            e = {"a": x, "b": x}
            log.warning("%s", e)
            return x
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert 'print({"h": x, "g": x})' in fixed and "jax.debug.print" not in fixed
    assert '    log.warning("%s", d)\n' in fixed  # left as it is, reported
    assert "jax.debug.callback(_host_warning, e, ordered=True)" in fixed


def test_a_scan_body_moves_after_the_scan_only_what_stacks_as_arrays() -> None:
    """Stacked by the scan, a dict would be iterated by its keys after it: the write of one
    goes to a host callback instead (found by `scripts/fuzz_effects.py`)."""
    source = textwrap.dedent("""\
        import pickle

        import jax
        import jax.numpy as jnp


        def _body(carry, x):
            tree = {"a": x, "b": x * 2}
            with open("tree.pkl", "wb") as f:
                pickle.dump(tree, f)
            return carry, x


        jax.lax.scan(_body, 0.0, jnp.ones((2, 1)))
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert "jax.debug.callback(_host_pickle_dump, tree, ordered=True)" in fixed
    assert "for tree in" not in fixed


def test_a_statement_stays_with_a_call_of_a_function_whose_statements_go_to_callbacks() -> None:
    """`_step` logs `a`, then calls `log_b`, whose statement goes to a host callback: moved
    after the call, `a` would come after `b` (found by `scripts/fuzz_effects.py`)."""
    source = textwrap.dedent("""\
        import logging

        import jax

        logger = logging.getLogger(__name__)


        def log_b(v):
            logger.warning("b %s", v)


        @jax.jit
        def _step(x):
            logger.warning("a %s", x)
            log_b(x)
            return x


        out = _step(1.0)
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert "out = _step(1.0)\n" in fixed  # its return is the same: no move after the call
    assert fixed.count("jax.debug.callback(") == 2


def test_a_dict_out_of_key_order_is_not_returned_to_move_after_the_call() -> None:
    """A jitted function's dict comes back with its keys sorted too: the pickling of one out
    of sorted order does not move after the call; it goes to a callback, which puts the keys
    of the dict (surely one: a display) back in order."""
    source = textwrap.dedent("""\
        import pickle

        import jax

        BLOBS = []


        @jax.jit
        def _step(x):
            tree = {"h": x, "g": x * 2}
            BLOBS.append(pickle.dumps(tree))
            return x


        _step(1.0)
        """)
    fixed = fix_text(source, RULES, unsafe_fixes=True).text
    assert "_, tree = _step(1.0)" not in fixed
    kept = (
        "    # A host callback gets a dict with its keys sorted: keep their order.\n"
        "    tree_keys = tuple(tree)\n\n"
        "    def _host_pickle_dumps(tree, tree_keys=tree_keys):\n"
        "        tree = jax.device_get(tree)\n"
        "        tree = {k: tree[k] for k in tree_keys}\n"
        "        BLOBS.append(pickle.dumps(tree))\n"
    )
    assert kept in fixed
    sorted_keys = source.replace('{"h": x, "g": x * 2}', '{"g": x * 2, "h": x}')
    assert "_, tree = _step(1.0)\n" in fix_text(sorted_keys, RULES, unsafe_fixes=True).text
