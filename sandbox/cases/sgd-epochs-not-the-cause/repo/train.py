"""Linear SVM trained with SGD on standardized digits; prints test accuracy."""
import warnings

from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

warnings.filterwarnings("ignore", category=ConvergenceWarning)

EPOCHS = 20

X, y = load_digits(return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
scaler = StandardScaler().fit(X_tr)
model = SGDClassifier(max_iter=EPOCHS, tol=None, random_state=0)
model.fit(scaler.transform(X_tr), y_tr)
print(f"accuracy: {model.score(scaler.transform(X_te), y_te):.4f}")
