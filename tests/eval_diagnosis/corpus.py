"""A small hand-made corpus of scored Records (and a workspace holding it) for build/eval/notebook tests."""

from __future__ import annotations

from pathlib import Path

from reprodiag.schema import (
    ExtractorInfo,
    FilterDecision,
    Hypothesis,
    Participant,
    Quality,
    Record,
    Symptom,
    TemporalTag,
    ThreadStats,
    Verdict,
)
from reprodiag.store import Store

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

# (error_type, metric, paper, obtained, root cause, refuted hypothesis, confirmed hypothesis, resolution)
CASES = [
    ("hyperparameter", "top-1", 76.1, 74.9, "The paper's learning rate assumed 8 GPUs with batch size 256; the user "
     "trained on 2 GPUs without scaling the learning rate linearly.", "data augmentation differs",
     "effective batch size is 4x smaller", "Scale the learning rate with the number of GPUs."),
    ("hyperparameter", "BLEU", 27.3, 25.8, "Warmup was 400 steps instead of the 4000 warmup steps used in the paper.",
     "sacreBLEU tokenization", "too few warmup steps", "Use 4000 warmup steps."),
    ("hyperparameter", "mAP", 42.0, 40.1, "Training used the 1x schedule (12 epochs) while the paper reports the 3x "
     "schedule with 36 epochs.", "different COCO version", "schedule is too short", "Train for 36 epochs."),
    ("data", "top-1", 81.8, 79.8, "Images were normalized with mean 0.5/std 0.5 instead of the ImageNet mean and "
     "std constants.", "learning rate too low", "wrong normalization constants", "Use ImageNet mean/std."),
    ("data", "mAP", 37.4, 35.2, "The user evaluated on VOC2012 val while the paper reports VOC2007 test, a "
     "different dataset version and split.", "NMS threshold", "wrong split", "Evaluate on VOC2007 test."),
    ("data", "F1", 91.2, 88.7, "Sentences longer than 128 tokens were truncated by the tokenizer; the paper used a "
     "max sequence length of 512.", "seed variance", "truncation", "Set max_seq_length=512."),
    ("evaluation_protocol", "BLEU", 28.4, 26.1, "The paper reports tokenized BLEU from multi-bleu.perl on "
     "compound-split output; the user ran sacreBLEU on detokenized text.", "learning rate warmup",
     "tokenized vs detokenized BLEU", "Compute tokenized BLEU with multi-bleu.perl."),
    ("evaluation_protocol", "top-1", 80.2, 78.9, "The paper's number uses ten-crop test-time augmentation; the user "
     "evaluated a single center crop.", "weight decay", "test-time augmentation", "Use ten-crop evaluation."),
    ("evaluation_protocol", "F1", 85.0, 81.3, "The paper reports micro-averaged F1 while the evaluation script "
     "computed macro F1.", "dataset version", "macro vs micro averaging", "Use micro averaging."),
    ("framework_version", "mIoU", 78.5, 76.0, "PyTorch 1.5 changed the default of align_corners in F.interpolate, "
     "which shifts the upsampled predictions.", "batch size", "align_corners default changed",
     "Pass align_corners=True explicitly."),
    ("framework_version", "accuracy", 92.3, 90.1, "transformers 4.x changed the default tokenizer behaviour "
     "after an upgrade; pinning the library version restored the score.", "label smoothing",
     "library version upgrade", "Pin transformers==3.5.1."),
    ("framework_version", "FID", 12.3, 14.8, "TensorFlow 2 resizes images with a different default "
     "interpolation than TensorFlow 1.15, changing the Inception features.", "seed", "TF version",
     "Use the TF 1.15 resize or torch-fidelity."),
    ("seed_hardware", "FID", 3.1, 3.9, "The paper reports the best of five random seeds; the mean over seeds "
     "matches the user's result.", "wrong Inception weights", "seed variance", "Report the mean over seeds."),
    ("seed_hardware", "top-1", 77.0, 75.2, "Mixed precision (AMP, fp16) overflowed in the attention logits; "
     "training in fp32 recovered the accuracy.", "learning rate", "fp16 overflow", "Train in fp32 or bf16."),
    ("seed_hardware", "reward", 3500.0, 2900.0, "Multi-GPU training with nondeterministic cuDNN kernels gave large "
     "run-to-run variance.", "env version", "nondeterminism", "Set deterministic algorithms and average seeds."),
]


#: Who read the hand-made records: an LLM reader (``build`` takes eval items from LLM-read records only).
LLM_READER = ExtractorInfo(backend="openai", model="gpt-test", prompt_version="extract-v3")


def make_records(n_repos: int = 15) -> list[Record]:
    """Deterministic scored records: ``n_repos`` repositories, three records each, all five types."""
    records: list[Record] = []
    splits = ["train", "train", "train", "validation", "test"]
    for i in range(n_repos):
        repo = f"lab{i:02d}/paper-{i:02d}"
        split = splits[i % len(splits)]
        for j in range(3):
            et, metric, paper_v, got, root, refuted, confirmed, fix = CASES[(i * 3 + j) % len(CASES)]
            resolved = (i + j) % 4 != 3
            tier = "historical" if (i + j) % 5 == 0 else "current"
            if i == 1 and j == 2:
                tier = "filtered"
            year = 2021 if tier == "historical" else 2018 if tier == "filtered" else 2023
            hyps = [Hypothesis(text=refuted, comment_id="c1", outcome="refuted")]
            if resolved:
                hyps.append(Hypothesis(text=confirmed, comment_id="c2", outcome="confirmed"))
            else:
                hyps.append(Hypothesis(text=confirmed, comment_id="c2", outcome="untested"))
            body = f"I get {metric} {got} but the paper reports {paper_v}. Environment: PyTorch 2.1, CUDA 12.1."
            if i == 0 and j == 0:
                body += f" My token is {SECRET} if you need it."
            records.append(Record(
                thread_id=f"{repo}#{j + 1}",
                repo=repo,
                error_type=et,  # type: ignore[arg-type]
                problem_statement=body,
                symptom=Symptom(metric=metric, paper_value=paper_v, obtained_value=got, gap=got - paper_v),
                hypothesis_chain=hyps if not (not resolved and j == 1) else
                [Hypothesis(text=confirmed, outcome="untested")],
                root_cause=root if resolved else None,
                resolution=fix if resolved else None,
                is_resolved=resolved,
                resolution_type="resolved" if resolved else "unresolved_valuable",
                diagnostic_depth=3,
                has_code_snippet=True,
                temporal_tag=TemporalTag(created_year=year, tier=tier,  # type: ignore[arg-type]
                                         weight={"current": 1.0, "historical": 0.5, "filtered": 0.0}[tier],
                                         framework_versions={"torch": "2.1"}),
                quality=Quality(score=6, keep=True),
                environment="PyTorch 2.1, CUDA 12.1, 8x A100" if j != 1 else None,
                tried="default config from the README" if j != 2 else None,
                stats=ThreadStats(participants=[Participant(login="alice-asker", role="asker")]),
                split=split,
                extractor=LLM_READER,
            ))
    return records


def populate(store: Store, n_repos: int = 15) -> list[Record]:
    """Fill a workspace: records, scored records (plus one dropped), decisions and one confirmed verdict."""
    recs = make_records(n_repos)
    store.put_decisions(FilterDecision(thread_id=r.thread_id, is_reproduction=True, score=0.9) for r in recs)
    store.put_records(recs)
    dropped = recs[0].model_copy(update={"thread_id": "lab00/paper-00#99",
                                         "quality": Quality(score=1, keep=False, drop_reason="low quality")})
    store.put_scored(recs + [dropped])
    store.put_verdict(Verdict(case_id="case-1", verdict="confirmed", thread_id=recs[3].thread_id))
    store.add_paper_links([{"paper_url": "https://arxiv.org/abs/2101.00001", "repo": recs[0].repo,
                            "paper_title": "A Fictional Paper on Scaling"}])
    return recs


def make_workspace(root: Path, n_repos: int = 15) -> Path:
    ws = root / "ws"
    with Store(ws) as s:
        populate(s, n_repos)
    return ws
