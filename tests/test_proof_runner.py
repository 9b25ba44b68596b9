"""The proof runner's ways of running host callbacks: at once (a CPU), deferred to the next
`jax.effects_barrier()` (what an accelerator's asynchronous dispatch allows), or at once with jit
disabled (concrete values); what a program did besides printing (its log records, the files it
left); project programs beside their modules; a program that hangs; and the comparison of printed
numbers within a backend's precision, integers exactly."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import pytest

from jaxfix.proofs.cases import (
    Callbacks,
    Case,
    Run,
    effect_differences,
    load_cases,
    problems,
    run_programs,
    same_output,
)

CALLBACKS = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    from jax.experimental import io_callback

    SEEN = []


    @jax.jit
    def f(x):
        jax.debug.callback(lambda v: SEEN.append("debug"), x, ordered=True)
        io_callback(lambda v: SEEN.append("io"), None, x, ordered=True)
        jax.debug.print("print {}", x.sum())
        y = jax.pure_callback(lambda v: (SEEN.append("pure"), v * 2)[1], x, x)
        return y


    out = f(jnp.ones(2))
    print("after the call:", sorted(SEEN), out.tolist())
    jax.effects_barrier()
    print("after the barrier:", sorted(SEEN))
    """)


@pytest.mark.jax
def test_callbacks_run_at_once_or_at_the_next_barrier(tmp_path: Path) -> None:
    program = tmp_path / "callbacks.py"
    program.write_text(CALLBACKS)
    at_once, deferred = run_programs(
        [program, program], callbacks=[Callbacks.SYNCHRONOUS, Callbacks.DEFERRED]
    )
    assert at_once.error is None and deferred.error is None
    assert at_once.stdout == (
        "print 2.0\n"
        "after the call: ['debug', 'io', 'pure'] [2.0, 2.0]\n"
        "after the barrier: ['debug', 'io', 'pure']\n"
    )
    # A pure callback's result is needed at once; the others wait for the barrier.
    assert deferred.stdout == (
        "after the call: ['pure'] [2.0, 2.0]\n"
        "print 2.0\n"
        "after the barrier: ['debug', 'io', 'pure']\n"
    )


@pytest.mark.jax
def test_deferred_callbacks_run_at_the_end_and_their_errors_fail_the_program(
    tmp_path: Path,
) -> None:
    ends = tmp_path / "ends.py"
    ends.write_text(
        "import jax\n"
        "jax.jit(lambda x: jax.debug.callback(print, x) or x)(1.0)\n"
        "print('last line')\n"
    )
    fails = tmp_path / "fails.py"
    fails.write_text(
        "import jax\njax.jit(lambda x: jax.debug.callback(lambda v: 1 / 0, x) or x)(1.0)\n"
    )
    ended, failed = run_programs([ends, fails])
    assert ended == Run("last line\n1.0\n", None)
    assert failed.error is not None and failed.error[0] == "ZeroDivisionError"


@pytest.mark.parametrize(
    ("printed", "expected", "same"),
    [
        pytest.param("0.714, 0.495\n", "0.7141, 0.4951\n", True, id="TPU matmul precision"),
        pytest.param("[1.0, -2.5] ok\n", "[1.0, -2.5] ok\n", True, id="identical"),
        pytest.param("0.7 0.5\n", "0.7141 0.4951\n", False, id="two digits off"),
        pytest.param("0.0001\n", "0.0\n", True, id="near zero"),
        pytest.param("loss 1.0\n", "lost 1.0\n", False, id="other text"),
        pytest.param("1.0 2.0\n", "1.0\n", False, id="another count of numbers"),
        pytest.param("101 rows\n", "100 rows\n", False, id="integers exactly"),
        pytest.param("[1 2 3]\n", "[1 2 3]\n", True, id="the same integers"),
        pytest.param("step 1000: 0.5\n", "step 1001: 0.5\n", False, id="a count among floats"),
        pytest.param("100.0 rows\n", "100 rows\n", True, id="a float against an integer"),
        pytest.param("100.5 rows\n", "100 rows\n", True, id="within tolerance of an integer"),
        pytest.param("1e2 rows\n", "101 rows\n", True, id="an exponent is a float"),
    ],
)
def test_printed_numbers_match_within_a_backends_precision(
    printed: str, expected: str, same: bool
) -> None:
    assert same_output(printed, expected) is same


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))
    return folder


@pytest.mark.jax
def test_a_concrete_run_disables_jit_and_runs_callbacks_at_once(tmp_path: Path) -> None:
    program = (
        write(
            tmp_path,
            {
                "p.py": """\
                import jax

                @jax.jit
                def f(x):
                    jax.debug.print("callback {}", x)
                    print("traced" if isinstance(x, jax.core.Tracer) else "concrete")
                    return x

                f(1.0)
                print("returned")
                """
            },
        )
        / "p.py"
    )
    concrete, deferred = run_programs(
        [program] * 2, callbacks=[Callbacks.CONCRETE, Callbacks.DEFERRED]
    )
    assert concrete == Run("callback 1.0\nconcrete\nreturned\n", None)
    assert deferred == Run("traced\nreturned\ncallback 1.0\n", None)


SAVES = """\
    import json, logging, os, pickle

    import jax
    import jax.numpy as jnp
    import numpy as np

    logging.getLogger("jax").warning("jax's own record")
    x = jnp.arange(3.0) / 3
    {convert}
    np.save("a.npy", x)
    np.savez("b.npz", x=x, n=np.arange(2))
    with open("c.pkl", "wb") as f:
        pickle.dump({{"x": x, "step": 3, "tag": ("t", [x])}}, f)
    with open("d.json", "w") as f:
        json.dump({{"loss": float(x.sum())}}, f)
    os.mkdir("sub")
    with open("sub/e.txt", "w") as f:
        f.write("{text}\\n")
    logging.getLogger("train").warning("loss %.4f after %d steps", float(x.sum()), {steps})
    print(type(x).__name__, x.tolist())
    """


@pytest.mark.jax
def test_what_a_program_wrote_and_logged_is_compared_by_its_values(tmp_path: Path) -> None:
    """A jax array and a NumPy array of the same values, saved or pickled, are the same effect;
    another value, another text, another file or another log record is not."""
    variants = {
        "jax": {"convert": "", "text": "done", "steps": 3},
        "numpy": {"convert": "x = jax.device_get(x) + 1e-5", "text": "done", "steps": 3},
        "changed": {"convert": "x = x * 2", "text": "other", "steps": 4},
    }
    programs = [
        write(tmp_path / name, {"p.py": SAVES.format(**fields)}) / "p.py"
        for name, fields in variants.items()
    ]
    concrete, numpy, changed = run_programs(programs)
    assert concrete.error is None, concrete.error
    assert sorted(concrete.files) == ["a.npy", "b.npz", "c.pkl", "d.json", "sub/e.txt"]
    assert concrete.files["a.npy"] == (
        "value",
        "array(3,)[0.0, 0.3333333432674408, 0.6666666865348816]",
    )
    assert concrete.files["sub/e.txt"] == ("text", "done\n")
    assert concrete.logs == ("WARNING:train:loss 1.0000 after 3 steps",)
    assert effect_differences(concrete, numpy) == []
    differences = effect_differences(concrete, changed)
    assert differences[0].startswith("printed 'ArrayImpl [0.0, 0.6666")
    assert differences[1].startswith("log record 1 is 'WARNING:train:loss 2.0000 after 4 steps'")
    assert [d.split(" as ")[0] for d in differences[2:]] == [
        "wrote a.npy",
        "wrote b.npz",
        "wrote c.pkl",
        "wrote d.json",
        "wrote sub/e.txt",
    ]
    lost = dataclasses.replace(numpy, files={k: v for k, v in numpy.files.items() if k != "c.pkl"})
    assert effect_differences(concrete, lost) == ["did not write c.pkl"]


MAIN = "import helpers\nfrom pkg import steps\n\nprint(helpers.NAME, steps.step())\n"


@pytest.mark.jax
def test_a_projects_program_imports_its_own_modules_each_time(tmp_path: Path) -> None:
    """Two projects with modules of the same names run in one interpreter: each imports its own
    (and a module a project's program imported is gone before the next program runs)."""
    for name in ("one", "two"):
        write(
            tmp_path / name,
            {
                "main.py": MAIN,
                "helpers.py": f"NAME = {name!r}\n",
                "pkg/__init__.py": "",
                "pkg/steps.py": f"def step():\n    return {name.upper()!r}\n",
            },
        )
    runs = run_programs([tmp_path / name / "main.py" for name in ("one", "two", "one")])
    assert [run.stdout for run in runs] == ["one ONE\n", "two TWO\n", "one ONE\n"]


@pytest.mark.jax
def test_a_program_past_its_limit_times_out_and_the_next_one_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that hangs (here a sleep; in the fixtures, a forked process that uses jax) is
    stopped, its processes too, and the programs after it run in a fresh interpreter."""
    monkeypatch.setenv("JAXFIX_PROOF_LIMIT", "3")
    pid = tmp_path / "pid"
    hangs = write(
        tmp_path,
        {
            "hangs.py": f"""\
                import multiprocessing, pathlib, time
                child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(600,))
                child.start()
                pathlib.Path({str(pid)!r}).write_text(str(child.pid))
                time.sleep(600)
                """,
            "runs.py": "print('ran')\n",
        },
    )
    hung, ran = run_programs([hangs / "hangs.py", hangs / "runs.py"], callbacks=Callbacks.CONCRETE)
    assert hung.error is not None and hung.error[0] == "TimeoutError"
    assert ran == Run("ran\n", None)
    status = Path(f"/proc/{pid.read_text()}/status")
    assert not status.exists() or "State:\tZ" in status.read_text()  # gone, or not yet reaped


# An ordered callback that raises inside `shard_map` over four CPU devices: jax then raises its
# error again at every later `jax.effects_barrier()` of the process (jax#37587), as it does after
# any ordered callback that raised on a TPU. (The first program of its interpreter: the devices
# are set before jax starts its backend.)
FAILING_CALLBACK = textwrap.dedent("""\
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    import numpy as np
    from jax.experimental import io_callback
    from jax.sharding import PartitionSpec as P


    def no_fives(x):
        if (x == 5).any():
            raise ValueError("no fives")
        return x


    def call():
        with jax.set_mesh(jax.make_mesh((4,), ("i",))):
            f = jax.jit(jax.shard_map(
                lambda x: io_callback(no_fives, x, x, ordered=True),
                in_specs=P("i"),
                out_specs=P("i"),
            ))
            f(jax.reshard(np.array([3.0, 4.0, 5.0, 6.0]), P("i")))
            jax.effects_barrier()
    """)


@pytest.mark.jax
def test_an_error_jax_raises_again_at_every_barrier_fails_neither_its_program_nor_the_next(
    tmp_path: Path,
) -> None:
    """The program that caught its callback's error ran as it meant to, though the runner's
    barrier at its end raises that error again; the next programs run in a fresh interpreter,
    where the stale error does not reach them. A program that does not catch it fails."""
    caught = "try:\n    call()\nexcept Exception as error:\n    print('caught', error)\n"
    folder = write(
        tmp_path,
        {
            "caught.py": FAILING_CALLBACK + caught,
            "uncaught.py": FAILING_CALLBACK + "call()\n",
            "next.py": CALLBACKS,
        },
    )
    runs = run_programs(
        [folder / "caught.py", folder / "uncaught.py", folder / "next.py"],
        callbacks=Callbacks.SYNCHRONOUS,
    )
    assert runs[0].error is None and "no fives" in runs[0].stdout
    assert runs[1].error is not None and "no fives" in runs[1].error[1]
    assert runs[2].error is None and "after the barrier" in runs[2].stdout


def _case(directory: Path, **keys: object) -> Case:
    """A case folder with these `expect.toml` keys, loaded the way the fixtures are."""
    folder = directory / "rule" / "case"
    folder.mkdir(parents=True)
    (folder / "before.py").write_text("raise RuntimeError('boom')\n")
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in keys.items()]
    lines = [line.replace("True", "true").replace("False", "false") for line in lines]
    (folder / "expect.toml").write_text("\n".join(lines) + "\n")
    return load_cases(directory)[0]


@pytest.mark.jax
def test_an_expected_error_is_matched_in_its_message_not_in_the_traceback(tmp_path: Path) -> None:
    """The traceback's frames name the runner's own file: "runner" is not in the message."""
    keys = {"description": "d", "codes": [], "fixed": False, "error": "RuntimeError"}
    in_message = _case(tmp_path / "a", **keys, error_match="boom")
    in_traceback = _case(tmp_path / "b", **keys, error_match="runner")
    runs = run_programs([in_message.before, in_traceback.before])
    assert problems(in_message, runs[:1]) == []
    assert problems(in_traceback, runs[1:]) == [
        "before.py's RuntimeError does not mention 'runner'"
    ]


@pytest.mark.parametrize(
    ("keys", "refused"),
    [
        pytest.param(
            {"error": "RuntimeError"}, "`error` needs an `error_match`", id="error without match"
        ),
        pytest.param({"fixed": True}, "a fixed case needs the `error`", id="fixed, never judged"),
        pytest.param({"colour": "red"}, "unknown keys ['colour']", id="unknown key"),
    ],
)
def test_a_case_whose_proof_could_not_fail_is_refused(
    tmp_path: Path, keys: dict[str, object], refused: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(refused)):
        _case(tmp_path, **{"description": "d", "codes": [], "fixed": False, **keys})
