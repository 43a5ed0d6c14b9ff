"""Score the model's translations against the references with sacreBLEU.

The paper reports BLEU computed with sacreBLEU's default (13a) tokenizer on
detokenized text.
"""
import json
import sacrebleu

# Tokenization applied by sacreBLEU before counting n-grams.
TOKENIZE = "none"


def main() -> None:
    with open("data/hyp.txt", encoding="utf-8") as fh:
        hyps = [line.rstrip("\n") for line in fh]
    with open("data/ref.txt", encoding="utf-8") as fh:
        refs = [line.rstrip("\n") for line in fh]
    bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize=TOKENIZE)
    print(f"BLEU = {bleu.score:.2f}")
    with open("results.json", "w", encoding="utf-8") as fh:
        json.dump({"test": {"bleu": round(bleu.score, 2), "tokenize": TOKENIZE}}, fh)


if __name__ == "__main__":
    main()
