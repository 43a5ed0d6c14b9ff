"""Train an MLP on scikit-learn's digits (pixel values 0..16) and print test accuracy."""
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from preprocess import normalize

warnings.filterwarnings("ignore", category=ConvergenceWarning)

X, y = load_digits(return_X_y=True)
X = normalize(X.astype(np.float64))
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
model = MLPClassifier(hidden_layer_sizes=(32,), max_iter=30, random_state=0)
model.fit(X_tr, y_tr)
print(f"accuracy={model.score(X_te, y_te):.4f}")
