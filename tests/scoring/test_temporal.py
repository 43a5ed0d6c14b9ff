"""Version detection and temporal tiers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reprodiag.schema import Record, TemporalTag
from scoring.config import ScoreConfig
from tests.scoring.conftest import score_one, versions_of

W = ScoreConfig().tier_weights


@pytest.mark.parametrize("text, expected", [
    ("torch==1.1.0", {"torch": "1.1.0"}),
    ("I use PyTorch 1.12 with CUDA 11.8", {"torch": "1.12", "cuda": "11.8"}),
    ("this was TF 1.x code", {"tensorflow": "1.x"}),
    ("tensorflow-gpu==1.15.0", {"tensorflow": "1.15.0"}),
    ("torch version: 1.8.1+cu111", {"torch": "1.8.1", "cuda": "11.1"}),
    ("torch 1.8.1+cu111 and CUDA 11.2", {"torch": "1.8.1", "cuda": "11.2"}),
    ("NVIDIA-SMI 470.57 Driver Version: 470.57 CUDA Version: 11.4", {"cuda": "11.4"}),
    ("cuDNN 8.2.1, Python 3.8.10", {"cudnn": "8.2.1", "python": "3.8.10"}),
    ("torch 1.12.1 py3.8_cuda11.3_cudnn8.3.2_0", {"torch": "1.12.1", "python": "3.8", "cuda": "11.3",
                                                   "cudnn": "8.3.2"}),
    ("numpy==1.21.2\ntransformers==4.21.0\ntimm==0.5.4\nmmcv-full==1.3.8\nfairseq==0.10.2\ndetectron2==0.6\n"
     "jax==0.3.4\njaxlib==0.3.2", {"numpy": "1.21.2", "transformers": "4.21.0", "timm": "0.5.4", "mmcv": "1.3.8",
                                   "fairseq": "0.10.2", "detectron2": "0.6", "jax": "0.3.4", "jaxlib": "0.3.2"}),
    ("torch.__version__ = '1.8.0'", {"torch": "1.8.0"}),
    ("Cuda compilation tools, release 11.8, V11.8.89", {"cuda": "11.8"}),
    ("pytorch-lightning 1.6 and torchvision 0.13", {"pytorch-lightning": "1.6", "torchvision": "0.13"}),
    ("first torch 1.4 then torch 1.9", {"torch": "1.4"}),
])
def test_detect_versions(text: str, expected: dict[str, str]) -> None:
    assert versions_of(text) == expected


@pytest.mark.parametrize("text", [
    "model.to('cuda:0')", "TF32 on the A100", "numpy arrays", "tokens 2 3", "", "复现 指标对不上",
])
def test_no_false_versions(text: str) -> None:
    assert versions_of(text) == {}


def _tag(make_record: Callable[..., Record], year: int, error_type: str, root_cause: str = "lr") -> TemporalTag:
    return score_one(make_record(year=year, error_type=error_type, root_cause=root_cause, resolution="")).temporal_tag


@pytest.mark.parametrize("year, tier", [(2023, "current"), (2022, "current"), (2021, "historical"),
                                        (2020, "historical"), (2019, "filtered"), (2015, "filtered")])
def test_framework_dependent_tiers_by_year(make_record: Callable[..., Record], year: int, tier: str) -> None:
    tag = _tag(make_record, year, "framework_version", "nn.GELU default changed")
    assert tag.tier == tier and tag.created_year == year
    assert tag.weight == W[tier]
    assert tag.still_relevant == (tier == "current") and tag.historical_value == (tier == "historical")


@pytest.mark.parametrize("etype", ["evaluation_protocol", "data", "hyperparameter", "seed_hardware"])
def test_algorithmic_causes_stay_current(make_record: Callable[..., Record], etype: str) -> None:
    tag = _tag(make_record, 2016, etype, "BLEU must be computed on detokenized text")
    assert tag.tier == "current" and tag.weight == 1.0 and tag.still_relevant


@pytest.mark.parametrize("cause", ["the default changed after upgrading torch", "fixed by pinning torch==1.4.0"])
def test_algorithmic_type_tied_to_a_version_is_dependent(make_record: Callable[..., Record], cause: str) -> None:
    assert _tag(make_record, 2018, "hyperparameter", cause).tier == "filtered"


def test_versions_merge_with_record_versions_which_win(make_record: Callable[..., Record]) -> None:
    r = make_record(environment="torch==1.8.0, CUDA 10.2",
                    temporal_tag=TemporalTag(framework_versions={"torch": "1.8.1", "mmcv": "1.3"}))
    assert score_one(r).temporal_tag.framework_versions == {"torch": "1.8.1", "cuda": "10.2", "mmcv": "1.3"}


def test_weights_are_configurable(make_record: Callable[..., Record]) -> None:
    cfg = ScoreConfig(tier_weights={"current": 1.0, "historical": 0.25, "filtered": 0.0})
    r = make_record(year=2020, error_type="framework_version", root_cause="x")
    assert score_one(r, cfg).temporal_tag.weight == 0.25
