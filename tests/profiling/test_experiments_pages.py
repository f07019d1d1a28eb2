"""The profiling chapter's page tables: the verdicts that change, and the zoo by family."""

import numpy as np
import pandas as pd

from infsched.profiling import experiments as ex


def test_changed_table_rounds_and_joins_number_and_verdict():
    changed = pd.DataFrame({
        "chapter": ["shepherd", "ramsis"], "item": ["table4", "fig3"],
        "quantity": ["rs269_b1_ms", "pareto_set_is_artifacts"], "paper": [79.0, np.nan],
        "ours (published)": [78.57000000000001, True], "verdict (published)": ["reproduced"] * 2,
        "ours (measured)": [1363.4712, False], "verdict (measured)": ["differs"] * 2})
    t = ex.changed_table(changed)
    assert t.to_dict("records") == [
        {"result": "shepherd table4", "quantity": "rs269 b1 ms", "paper": "79",
         "on the published profile": "78.57, reproduced", "on the measured profile": "1363, differs"},
        {"result": "ramsis fig3", "quantity": "pareto set is artifacts", "paper": "claim",
         "on the published profile": "holds, reproduced", "on the measured profile": "fails, differs"}]


def test_zoo_table_one_row_per_family():
    zoo = pd.DataFrame({"model": ["resnet18", "resnet50", "fasterrcnn"], "family": ["resnet", "resnet", "rcnn"],
                        "source": ["torchvision"] * 3, "task": ["image"] * 3,
                        "input": ["3x224x224", "3x224x224", ""], "params_M": [11.69, 25.56, np.nan],
                        "available": [True, True, False], "note": ["", "", "needs ops"]})
    t = ex.zoo_table(zoo)
    assert t.to_dict("records") == [
        {"family": "resnet", "source": "torchvision", "models": 2, "build here": 2, "inputs": "3x224x224",
         "params (M)": "11.7–25.6"},
        {"family": "rcnn", "source": "torchvision", "models": 1, "build here": 0, "inputs": "—",
         "params (M)": "—"}]
