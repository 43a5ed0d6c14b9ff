"""Train the paper's small MLP on scikit-learn's digits and print test accuracy."""
import json
import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

warnings.filterwarnings("ignore", category=ConvergenceWarning)

with open("config.json", encoding="utf-8") as fh:
    cfg = json.load(fh)

X, y = load_digits(return_X_y=True)
X = X / 16.0
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
model = MLPClassifier(hidden_layer_sizes=(cfg["hidden"],), learning_rate_init=cfg["lr"],
                      max_iter=cfg["epochs"], batch_size=cfg["batch_size"], random_state=0)
model.fit(X_tr, y_tr)
print(f"test accuracy: {model.score(X_te, y_te):.4f}")
