"""The smaller faults of a bad-input round, each probe as a test: a cache folder that cannot be
written is refused by ``infsched run`` before its kernel starts; an empty Azure trace is refused
by its loader, naming the file; a user policy that raises is named; ``True`` and ``1.0`` are not
integers; a parameter name with a look-alike letter is answered with the allowed name it looks
like; a number too long for Python is out of range; a point function's signature is checked
against the grid before the first point."""

from __future__ import annotations

import numpy as np
import pytest

from infsched.cli import main, parse_param
from infsched.errors import ConfigError
from infsched.sweep import run_sweep

CYRILLIC_E = "\u0435"


def test_run_refuses_a_cache_folder_it_cannot_create_before_its_kernel(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")  # a folder below a file cannot be created (root may write anywhere)
    monkeypatch.setenv("INFSCHED_CACHE", str(blocker / "cache"))
    assert main(["run", "tad", "--scale", "smoke", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "INFSCHED_CACHE" in err and "cannot be created" in err and not (tmp_path / "run").exists()


def test_an_empty_azure_trace_is_refused_naming_the_file(tmp_path):
    from infsched.shepherd.azure import load_azure_invocations

    path = tmp_path / "invocations_per_function_md.anon.d01.csv"
    path.write_text(",".join(["HashOwner", "HashApp", "HashFunction", "Trigger"]
                             + [str(i) for i in range(1, 1441)]) + "\n")
    with pytest.raises(ConfigError, match=f"{path.name}.*holds no rows"):
        load_azure_invocations(path)


def _raises(s, lat, by_accuracy, params):
    return 1 // 0


def test_a_user_policy_that_raises_is_named():
    from infsched.serving import ServingConfig, Zoo, plugins, simulate

    plugins.register(plugins.UserPolicy("i44-raises", _raises))
    cfg = ServingConfig(Zoo.of("ramsis-image"), workers=2, slo_ms=150.0, policy="i44-raises")
    with pytest.raises(ConfigError, match=r"policy 'i44-raises' raised ZeroDivisionError"):
        simulate(cfg, 50, load=0.5, seed=1)


def test_bools_and_integral_floats_are_not_integers():
    from infsched.kvcache.model import Instance
    from infsched.ramsis.experiments import fig6

    with pytest.raises(ConfigError, match="prompt.*not True/False"):
        Instance(np.array([0]), [True], np.array([1]), 10)
    with pytest.raises(ConfigError, match="seed = 1.0: must be a non-negative integer"):
        fig6("smoke", 1.0)


def test_a_look_alike_parameter_name_is_answered_with_the_allowed_one(capsys):
    from infsched.chapters import chapter_grid

    with pytest.raises(ConfigError, match=r"U\+0430 CYRILLIC SMALL LETTER A.*did you mean 'a_star'"):
        chapter_grid("tad", {"a_st\u0430r": [70.0]}, experiments=["fig5"], scale="smoke")
    assert main(["run", "tad", "-p", f"s{CYRILLIC_E}ed=1"]) == 2
    err = capsys.readouterr().err
    assert "U+0435 CYRILLIC SMALL LETTER IE" in err and "did you mean 'seed'?" in err


def test_a_number_too_long_for_python_is_out_of_range():
    with pytest.raises(ConfigError, match="a number of 5,001 digits>: out of range"):
        parse_param("n_servers=" + "9" * 5001)


def test_a_point_functions_signature_is_checked_before_the_first_point():
    with pytest.raises(ConfigError, match=r"fn = 'builtins.abs': cannot be called .* x"):
        run_sweep(abs, [{"x": -1}], cache_dir=False)
