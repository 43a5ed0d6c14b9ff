#!/bin/sh
# Evaluate with the seed from the README.
python train.py --seed 9
