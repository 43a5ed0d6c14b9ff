"""Input normalization (copied from an MNIST pipeline)."""

# MNIST statistics for 8-bit images (0..255).
MAX_VALUE = 255.0
MEAN = 0.1307
STD = 0.3081


def normalize(x):
    return (x / MAX_VALUE - MEAN) / STD
