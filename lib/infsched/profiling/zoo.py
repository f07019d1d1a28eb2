"""The model zoo: the papers' models built from their architecture definitions, never from
downloaded weights (latency does not depend on the weights' values).

Image models come from torchvision (ResNets, ResNeXts, EfficientNets, MobileNets, ShuffleNets,
DenseNets, GoogLeNet, Inception v3, Faster R-CNN) and timm (ResNeSt); the BERT family of the
RAMSIS text task and Shepherd's BERT from transformers' ``BertConfig``. Each image model is fed
at the resolution its published ImageNet accuracy was measured at (torchvision's and timm's
evaluation crop), the BERTs with 384 tokens, as the RAMSIS artifact padded them.

A model that cannot be built here (its library does not import, or it needs compiled operators
the installed build lacks) raises :class:`ModelUnavailable` with the reason; :func:`availability`
lists every entry with its status, so nothing is skipped silently.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from infsched.errors import ConfigError
from infsched.shepherd.profile import SHEPHERD_NAMES  # Table 4's short names -> zoo names

__all__ = ["ZooEntry", "ZOO", "FAMILIES", "ModelUnavailable", "BuiltModel", "build", "availability",
           "zoo_names", "SHEPHERD_NAMES", "PAPERS", "check_names"]


class ModelUnavailable(RuntimeError):
    """A zoo model that cannot be built in this environment; the message says why."""


@dataclass(frozen=True)
class ZooEntry:
    """One model of the zoo.

    ``source`` is the library that builds it (``torchvision``, ``timm``, ``transformers``);
    ``arch`` the builder's own name for it; ``task`` ``"image"`` or ``"text"`` (the RAMSIS
    profile task, also the ``task`` column of a profile CSV); ``resolution`` the square input
    side for images, ``seq_len`` the token count for text; ``kwargs`` extra builder arguments.
    ``quantize_cpu`` applies torch's dynamic int8 quantisation of ``nn.Linear`` on the CPU (the
    RAMSIS artifact's BERTs were int8-dynamic quantised).
    """

    name: str
    family: str
    source: str
    arch: str
    task: str = "image"
    resolution: int = 224
    seq_len: int = 384
    kwargs: dict = field(default_factory=dict)
    quantize_cpu: bool = False
    papers: tuple[str, ...] = ()


def _tv(name: str, family: str, res: int, papers: tuple[str, ...] = ("ramsis",), **kw: Any) -> ZooEntry:
    return ZooEntry(name, family, "torchvision", name, resolution=res, kwargs=kw, papers=papers)


def _bert(name: str, layers: int, hidden: int, papers: tuple[str, ...] = ("ramsis",),
          quantize: bool = True) -> ZooEntry:
    # google/bert_uncased_L-*_H-* shapes (RAMSIS's BERTs): heads = hidden / 64, FFN = 4 x hidden
    cfg = dict(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=max(hidden // 64, 2),
               intermediate_size=4 * hidden, num_labels=3)
    return ZooEntry(name, "bert", "transformers", "bert", task="text", kwargs=cfg,
                    quantize_cpu=quantize, papers=papers)


_ENTRIES: list[ZooEntry] = [
    # ResNet family: RAMSIS's image set, Shepherd's Table 4, the TAD paper's Fig. 2
    _tv("resnet18", "resnet", 224, ("ramsis", "shepherd", "tad")),
    _tv("resnet34", "resnet", 224, ("ramsis", "shepherd", "tad")),
    _tv("resnet50", "resnet", 224, ("ramsis", "shepherd", "tad")),
    _tv("resnet101", "resnet", 224, ("ramsis", "shepherd", "tad")),
    _tv("resnet152", "resnet", 224, ("ramsis", "shepherd", "tad")),
    _tv("resnext101_32x8d", "resnext", 224),
    _tv("resnext101_64x4d", "resnext", 224),
    # EfficientNets at their evaluation crops (torchvision's weight transforms)
    _tv("efficientnet_b0", "efficientnet", 224),
    _tv("efficientnet_b1", "efficientnet", 240),
    _tv("efficientnet_b2", "efficientnet", 288),
    _tv("efficientnet_b3", "efficientnet", 300),
    _tv("efficientnet_b4", "efficientnet", 380),
    _tv("efficientnet_b5", "efficientnet", 456),
    _tv("efficientnet_b6", "efficientnet", 528),
    _tv("efficientnet_b7", "efficientnet", 600),
    _tv("efficientnet_v2_s", "efficientnet", 384),
    _tv("efficientnet_v2_m", "efficientnet", 480),
    _tv("efficientnet_v2_l", "efficientnet", 480),
    _tv("mobilenet_v2", "mobilenet", 224),
    _tv("mobilenet_v3_large", "mobilenet", 224),
    _tv("shufflenet_v2_x0_5", "shufflenet", 224),
    _tv("shufflenet_v2_x1_0", "shufflenet", 224),
    _tv("shufflenet_v2_x1_5", "shufflenet", 224),
    _tv("shufflenet_v2_x2_0", "shufflenet", 224),
    _tv("googlenet", "inception", 224, ("ramsis", "shepherd"), aux_logits=False, init_weights=False),
    _tv("inception_v3", "inception", 299, ("ramsis", "shepherd"), aux_logits=False, init_weights=False),
    # Shepherd's Table 4 beyond the RAMSIS set
    _tv("densenet121", "densenet", 224, ("shepherd",)),
    _tv("densenet161", "densenet", 224, ("shepherd",)),
    _tv("densenet169", "densenet", 224, ("shepherd",)),
    _tv("densenet201", "densenet", 224, ("shepherd",)),
    ZooEntry("resnest50d", "resnest", "timm", "resnest50d", resolution=224, papers=("shepherd",)),
    ZooEntry("resnest101e", "resnest", "timm", "resnest101e", resolution=256, papers=("shepherd",)),
    ZooEntry("resnest200e", "resnest", "timm", "resnest200e", resolution=320, papers=("shepherd",)),
    ZooEntry("resnest269e", "resnest", "timm", "resnest269e", resolution=416, papers=("shepherd",)),
    ZooEntry("fasterrcnn_resnet50_fpn", "rcnn", "torchvision", "fasterrcnn_resnet50_fpn",
             resolution=800, kwargs={"weights_backbone": None}, papers=("shepherd",)),
    # BERTs: RAMSIS's text set (int8-dynamic on the CPU, 384 tokens) and Shepherd's fp32 BERT-base
    _bert("bert_tiny", 2, 128),
    _bert("bert_mini", 4, 256),
    _bert("bert_small", 4, 512),
    _bert("bert_medium", 8, 512),
    _bert("bert_base", 12, 768),
    _bert("bert_base_fp32", 12, 768, papers=("shepherd",), quantize=False),
]

#: name -> entry, in the order above
ZOO: dict[str, ZooEntry] = {e.name: e for e in _ENTRIES}
#: family -> names
FAMILIES: dict[str, tuple[str, ...]] = {}
for _e in _ENTRIES:
    FAMILIES[_e.family] = FAMILIES.get(_e.family, ()) + (_e.name,)

#: the papers whose models the zoo holds (a name for :func:`check_names`)
PAPERS = ("ramsis", "shepherd", "tad")

def zoo_names(paper: str | None = None) -> tuple[str, ...]:
    """Every zoo name, or those a paper uses (``"ramsis"``, ``"shepherd"``, ``"tad"``)."""
    return tuple(e.name for e in _ENTRIES if paper is None or paper in e.papers)


def check_names(names) -> tuple[str, ...]:
    """``names`` as a tuple of zoo names; a family name (``resnet``), a paper (``ramsis``,
    ``shepherd``, ``tad``) or ``all`` expands to its members. An unknown name is a ConfigError
    listing the known ones."""
    if isinstance(names, str):
        names = [names]
    out: list[str] = []
    for n in names:
        if n in ZOO:
            out.append(n)
        elif n in FAMILIES:
            out.extend(FAMILIES[n])
        elif n in PAPERS:
            out.extend(zoo_names(n))
        elif n == "all":
            out.extend(ZOO)
        else:
            raise ConfigError(f"model = {n!r}: unknown; the zoo has " + ", ".join(ZOO)
                              + "; families: " + ", ".join(FAMILIES) + "; papers: "
                              + ", ".join(PAPERS) + "; or 'all'")
    return tuple(dict.fromkeys(out))


# --------------------------------------------------------------------------- libraries

_IMPORT_NOTES: dict[str, str] = {}


def import_torchvision():
    """torchvision, or ModelUnavailable.

    PyPI's torchvision wheel links torch's CUDA libraries; beside a CPU-only torch its compiled
    operators do not load and the import stops at registering meta kernels for them
    (``operator torchvision::nms does not exist``). The model definitions are pure Python and
    need none of those operators, so on that failure the import is retried with the meta
    registrations left out. Detection models, which need ``torchvision.ops``, then stay
    unavailable (see :func:`build`).
    """
    if "torchvision" in sys.modules and "torchvision.models" in sys.modules:
        return sys.modules["torchvision"]
    try:
        import torchvision  # noqa: F401
        return sys.modules["torchvision"]
    except ImportError as exc:
        raise ModelUnavailable(f"torchvision does not import: {exc}") from None
    except RuntimeError as exc:
        if "torchvision::" not in str(exc):
            raise ModelUnavailable(f"torchvision does not import: {exc}") from None
        for k in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
            del sys.modules[k]
        sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
        _IMPORT_NOTES["torchvision"] = ("definitions only: torchvision's compiled operators "
                                        "do not load beside a CPU torch")
        try:
            import torchvision  # noqa: F401,F811
        except Exception as exc2:  # still broken: report, do not guess further
            raise ModelUnavailable(f"torchvision does not import: {exc2}") from None
        return sys.modules["torchvision"]


def _torchvision_ops_ok() -> bool:
    import torch

    import_torchvision()
    try:
        torch.ops.torchvision.nms  # noqa: B018  (raises if the compiled ops are missing)
        return True
    except (AttributeError, RuntimeError):
        return False


# --------------------------------------------------------------------------- building

@dataclass
class BuiltModel:
    """A model in eval mode and a function giving an input batch of ``b`` on a device."""

    entry: ZooEntry
    module: Any
    make_input: Callable[[int, Any], Any]
    precision: str

    @property
    def input_desc(self) -> str:
        e = self.entry
        return f"{e.seq_len} tokens" if e.task == "text" else f"3x{e.resolution}x{e.resolution}"


def build(name: str, *, device: str = "cpu", quantize: bool | None = None) -> BuiltModel:
    """Build zoo model ``name`` with random weights, in eval mode, on the CPU.

    ``quantize`` (default: the entry's ``quantize_cpu``) applies dynamic int8 quantisation to the
    ``nn.Linear`` layers; it exists on the CPU only, so it is ignored for ``device="cuda"``.
    Raises :class:`ModelUnavailable` if the model cannot be built here, ConfigError for an
    unknown name.
    """
    (name,) = check_names([name])
    e = ZOO[name]
    import torch

    if e.source == "torchvision":
        tv = import_torchvision()
        if e.family == "rcnn":
            if not _torchvision_ops_ok():
                raise ModelUnavailable(
                    f"{name}: needs torchvision's compiled operators (torchvision.ops.nms, "
                    "roi_align), which this torchvision build cannot load beside the installed torch")
            module = tv.models.get_model(e.arch, weights=None, **e.kwargs)
            res = e.resolution

            def make_input(b: int, dev: Any) -> Any:
                return [torch.rand(3, res, res, device=dev) for _ in range(b)]
        else:
            module = tv.models.get_model(e.arch, weights=None, **e.kwargs)
    elif e.source == "timm":
        try:
            import_torchvision()  # timm's data utilities import torchvision
            import timm
        except ModelUnavailable:
            raise
        except Exception as exc:
            raise ModelUnavailable(f"{name}: timm does not import: {exc}") from None
        module = timm.create_model(e.arch, pretrained=False, **e.kwargs)
    elif e.source == "transformers":
        try:  # transformers probes torchvision on import: give it the working one, if any
            import_torchvision()
        except ModelUnavailable:
            pass
        try:
            from transformers import BertConfig, BertForSequenceClassification
        except Exception as exc:
            raise ModelUnavailable(f"{name}: transformers does not import: {exc}") from None
        module = BertForSequenceClassification(BertConfig(**e.kwargs))
    else:  # pragma: no cover - the table above names only these three
        raise ModelUnavailable(f"{name}: unknown source {e.source!r}")
    module = module.eval()
    precision = "fp32"
    q = e.quantize_cpu if quantize is None else bool(quantize)
    if q and device == "cpu":
        import warnings

        with warnings.catch_warnings():  # torch.ao's deprecation notice, not a problem here
            warnings.simplefilter("ignore")
            module = torch.ao.quantization.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)
        precision = "int8-dynamic"

    if e.task == "text":
        vocab = int(module.config.vocab_size) if hasattr(module, "config") else 30522
        seq = e.seq_len

        def make_input(b: int, dev: Any) -> Any:
            g = torch.Generator().manual_seed(b)
            ids = torch.randint(0, vocab, (b, seq), generator=g).to(dev)
            return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    elif e.family != "rcnn":
        res = e.resolution

        def make_input(b: int, dev: Any) -> Any:
            g = torch.Generator().manual_seed(b)
            return torch.randn(b, 3, res, res, generator=g).to(dev)
    return BuiltModel(e, module, make_input, precision)


def availability(names=None) -> Any:
    """A DataFrame: every zoo model (or ``names``), whether it builds here, and why not.

    Building a model takes a moment (tens of ms to a few s for the largest), so this is for
    the chapter and ``infsched profile --list``, not for a hot path."""
    import pandas as pd

    rows = []
    for n in check_names(list(ZOO) if names is None else names):
        e = ZOO[n]
        try:
            bm = build(n)
            nparams = sum(p.numel() for p in bm.module.parameters()) if e.family != "bert" or not \
                e.quantize_cpu else sum(p.numel() for p in build(n, quantize=False).module.parameters())
            rows.append({"model": n, "family": e.family, "source": e.source, "task": e.task,
                         "input": bm.input_desc, "params_M": nparams / 1e6, "available": True,
                         "note": _IMPORT_NOTES.get(e.source, "")})
        except ModelUnavailable as exc:
            rows.append({"model": n, "family": e.family, "source": e.source, "task": e.task,
                         "input": "", "params_M": float("nan"), "available": False,
                         "note": str(exc)})
    return pd.DataFrame(rows)
