"""``infsched profile``: the issue's command works on a fresh install; errors are one line."""

import pandas as pd
import pytest
import torch

from infsched.cli import main
from infsched.profiling import RAW_COLUMNS


def test_profile_resnet18_on_the_cpu(tmp_path, capsys):
    out = tmp_path / "resnet18.csv"
    rc = main(["profile", "resnet18", "--batch-sizes", "1,2,4", "--device", "cpu", "--out", str(out),
               "--no-progress", "--reps", "5", "--warmup", "1", "--threads", "1"])
    assert rc == 0
    df = pd.read_csv(out)
    assert list(df.columns) == list(RAW_COLUMNS)
    assert df["batch"].tolist() == [1, 2, 4] and (df["model"] == "resnet18").all()
    # a bigger batch takes longer: by far more than timing noise (it does 4x the work of batch 1
    # on one thread). The fastest call of each, because a busy machine (another process on the
    # same cores) slows some calls by several times but rarely all of them
    assert (df["threads"] == 1).all()
    assert df["min_ms"].iloc[2] > 1.5 * df["min_ms"].iloc[0]
    printed = capsys.readouterr().out
    assert "alpha_ms" in printed and f"wrote {out}" in printed
    # run again: nothing re-measured
    assert main(["profile", "resnet18", "--batch-sizes", "1,2,4", "--device", "cpu", "--out", str(out),
                 "--no-progress"]) == 0
    assert "3 (model, batch) point(s) were already in" in capsys.readouterr().out
    assert len(pd.read_csv(out)) == 3


def test_profile_to_stdout(capsys):
    assert main(["profile", "bert_tiny", "--batch-sizes", "1", "--device", "cpu", "--reps", "2",
                 "--min-reps", "1", "--warmup", "0", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == ",".join(RAW_COLUMNS) and lines[1].startswith("text,bert_tiny,1,")


def test_profile_list(capsys):
    assert main(["profile", "--list", "resnet18", "bert_tiny"]) == 0
    out = capsys.readouterr().out
    assert "resnet18" in out and "bert_tiny" in out and "available" in out


@pytest.mark.parametrize("argv, message", [
    (["profile", "resnet19"], "model = 'resnet19': unknown"),
    (["profile", "resnet18", "--batch-sizes", "0,1"], "batch_sizes = '0,1': batch size 0 is below 1"),
    (["profile", "resnet18", "--batch-sizes", "-2"], "batch_sizes"),
    (["profile", "resnet18", "--device", "tpu"], "device = 'tpu': must be one of"),
    (["profile"], "name at least one model"),
])
def test_profile_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infsched: error: ") and message in err and "\n" not in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_profile_cuda_where_there_is_none(capsys):
    assert main(["profile", "resnet18", "--device", "cuda"]) == 2
    assert "device = 'cuda'" in capsys.readouterr().err


def test_a_model_that_cannot_be_built_exits_1_and_says_why(tmp_path, capsys, monkeypatch):
    from infsched.profiling import zoo

    def broken(name, **kw):
        raise zoo.ModelUnavailable(f"{name}: needs what is not here")

    monkeypatch.setattr(zoo, "build", broken)
    assert main(["profile", "resnet18", "--device", "cpu", "--out", str(tmp_path / "x.csv"),
                 "--no-progress"]) == 1
    assert "resnet18: not profiled: resnet18: needs what is not here" in capsys.readouterr().err
