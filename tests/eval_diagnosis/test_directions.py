"""Normalisation, concepts and acceptable directions."""

from __future__ import annotations

from eval_diagnosis.directions import acceptable_directions, concepts_in, infer_type, key_terms, normalize


def test_synonyms_fold_to_one_token() -> None:
    assert normalize("Learning-Rate") == normalize("LR") == "lr"
    assert normalize("batch size") == normalize("bs") == "bs"
    assert normalize("mixed precision") == normalize("AMP") == normalize("FP16") == "fp16"
    assert normalize("tokenizer") == normalize("tokenization") == "tokeniz"
    assert normalize("detokenized") == "detokeniz"
    assert normalize("学习率") == "lr"


def test_concepts_and_types() -> None:
    ids = {c.id for c in concepts_in("sacreBLEU on detokenized output vs multi-bleu.perl")}
    assert {"metric_impl", "postprocess"} <= ids
    assert infer_type("PyTorch 1.5 changed the default of align_corners") == "framework_version"
    assert infer_type("random seed variance") == "seed_hardware"
    assert infer_type("warmup is too short") == "hyperparameter"
    assert infer_type("nothing recognisable here") is None


def test_acceptable_directions_are_specific() -> None:
    acc = acceptable_directions("PyTorch 1.5 changed the default of align_corners in F.interpolate.",
                                "framework_version", extra=["align corners default changed"])
    assert "a changed default or API behaviour" in acc
    assert any("align_corners" in a for a in acc)
    assert acc[-1] == "align corners default changed"
    assert "hyperparameters" not in acc and "the data" not in acc
    vague = acceptable_directions("Something odd happened.", "other")
    assert vague  # never empty: falls back to the root cause itself


def test_key_terms_keep_identifiers() -> None:
    terms = key_terms("Use multi-bleu.perl with 13a tokenization and max_seq_length=512")
    assert "multi-bleu.perl" in terms and "max_seq_length" in terms


def test_code_literals_are_not_key_terms() -> None:
    from eval_diagnosis.directions import acceptable_directions

    dirs = acceptable_directions("Before PyTorch 1.3 grid_sample behaved like `align_corners=True`; from 1.3 the "
                                 "default is False.", "framework_version")
    low = [d.lower() for d in dirs]
    assert "align_corners" in low and "grid_sample" in low
    assert "true" not in low and "false" not in low
