"""Error-type decision: cue families, negation/refutation, the confirming exchange, Chinese."""

from __future__ import annotations

import pytest

from extract.causetype import cause_scores
from extract.rules import RulesExtractor
from tests.extract.threads import make_thread

BODY = "I get 79.8 top-1 but the paper reports 81.8. Any idea?"


@pytest.mark.parametrize(("sentence", "etype"), [
    ("You need to scale the learning rate with the total batch size.", "hyperparameter"),
    ("Train for 300 epochs with a cosine schedule and 5 warmup epochs.", "hyperparameter"),
    ("Use gradient accumulation of 4 steps to match the effective batch.", "hyperparameter"),
    ("The paper used the 2017 version of the dataset, not the 2014 split.", "data"),
    ("Inputs must be normalized with the ImageNet mean and std during preprocessing.", "data"),
    ("The number is computed with the official evaluation script using tokenized BLEU.", "evaluation_protocol"),
    ("Our README numbers use flip test and multi-scale testing.", "evaluation_protocol"),
    ("In torchvision 0.17 the default antialias changed from False to True.", "framework_version"),
    ("After upgrading to transformers 4.30 the tokenizer behaviour changed.", "framework_version"),
    ("Results vary with the random seed; with fp16 there is more run-to-run variance.", "seed_hardware"),
    ("请把学习率调小一点，批大小也要对应修改。", "hyperparameter"),
    ("评估脚本不同，我们用的是官方评测。", "evaluation_protocol"),
    ("是随机种子的问题，混合精度也会带来波动。", "seed_hardware"),
    ("数据集版本不一样，预处理也不同。", "data"),
    ("这是版本问题，升级 torch 2.1 之后默认值变了。", "framework_version"),
])
def test_cue_families(sentence: str, etype: str) -> None:
    scores = cause_scores(sentence.lower())
    assert max(scores, key=scores.__getitem__) == etype, scores


@pytest.mark.parametrize("sentence", [
    "It is not the learning rate, I checked.",
    "Warmup didn't help at all.",
    "I already use the same learning rate as the paper.",
    "Tried 300 epochs, no difference.",
])
def test_negated_and_refuted_cues_count_against_their_type(sentence: str) -> None:
    assert cause_scores(sentence.lower()).get("hyperparameter", 0) < 0


def test_test_time_context_moves_crop_cues_to_evaluation() -> None:
    train = cause_scores("random resized crop of the training images")
    test = cause_scores("center crop at test time with resize 256")
    assert train.get("data", 0) > 0 and test.get("evaluation_protocol", 0) > test.get("data", 0)


def test_confirmed_reply_outweighs_the_question() -> None:
    # the asker speculates about the seed (body) and a helper suggests lr (refuted); the maintainer's
    # evaluation explanation is the one the asker confirms
    t = make_thread("Lower accuracy, seed issue?", BODY + " Maybe the random seed or the GPU type matters?", [
        ("helper", "NONE", "Probably the learning rate, did you scale it?"),
        ("asker", "NONE", "I already use the paper's learning rate, no difference."),
        ("maint", "MEMBER", "The README numbers use the official evaluation script with center crop at test time."),
        ("asker", "NONE", "That was it, thanks! Now I get 81.7."),
    ], state_reason="completed")
    r = RulesExtractor().extract([t])[0]
    assert r.error_type == "evaluation_protocol"
    outcomes = {h.comment_id: h.outcome for h in r.hypothesis_chain}
    assert outcomes["c1-1"] == "refuted" and outcomes["c1-3"] == "confirmed"


def test_closing_explanation_decides_without_explicit_thanks() -> None:
    # closed as completed; the asker only reports the post-fix number (no "thanks"): the closing
    # explanation is still the settled cause
    t = make_thread("mIoU 46.1 (paper 48.3)", "Trained the B model, mIoU 46.1, paper 48.3 mIoU. What's different?", [
        ("maint", "MEMBER", "The paper reports the multi-scale + flip result. Use --aug-test."),
        ("asker", "NONE", "aug-test: 48.1"),
    ], state_reason="COMPLETED")
    r = RulesExtractor().extract([t])[0]
    assert r.error_type == "evaluation_protocol" and r.resolution_type == "resolved"
    assert r.hypothesis_chain and r.hypothesis_chain[0].outcome == "confirmed"


def test_library_change_explains_what_it_changed() -> None:
    t = make_thread("FID worse after updating torchvision", "FID 8.4 now, paper reports 6.0.", [
        ("maint", "OWNER", "We resize the generated images with torchvision. In 0.17 the default antialias changed "
         "from False to True, so set antialias=False."),
        ("asker", "NONE", "Fixed, FID 6.1 again. Thanks!"),
    ], state_reason="completed")
    assert RulesExtractor().extract([t])[0].error_type == "framework_version"


def test_chinese_thread() -> None:
    t = make_thread("复现结果对不上", "按照论文的设置训练，我的结果是 76.1，论文中是 78.5。", [
        ("maint", "OWNER", "论文里用的是 8 卡，总的批大小是 256，你用 2 卡需要把学习率按比例缩小。"),
        ("asker", "NONE", "改了学习率之后是 78.3，谢谢！"),
    ], state_reason="completed")
    r = RulesExtractor().extract([t])[0]
    assert (r.error_type, r.resolution_type) == ("hyperparameter", "resolved")
    assert r.symptom.paper_value in (78.5, None) and r.symptom.obtained_value in (76.1, None)
    from tests.extract.test_rules import _ranked

    assert _ranked(t) == (78.5, 76.1)


def test_nothing_causal_is_other() -> None:
    t = make_thread("Lower than paper", BODY, [("helper", "NONE", "Same here, following.")], state="open")
    assert RulesExtractor().extract([t])[0].error_type == "other"
