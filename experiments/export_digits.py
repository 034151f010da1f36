#!/usr/bin/env python3
"""Writes scikit-learn's bundled handwritten digits (UCI's optical digits: 1797 8x8 images, 16 grey
levels, 10 classes; shipped inside the scikit-learn wheel, nothing downloaded) as IDX files laid out
as Fashion-MNIST's, for `pipetwin run --data idx --data-dir DIR`: a fixed, stratified split of 1437
training and 360 test images (seed 0), pixels scaled from 0..16 to 0..255.

    .venv/bin/pip install scikit-learn
    python3 experiments/export_digits.py DIR
"""
import argparse
import gzip
import os
import struct
import sys


def write_idx(path, magic, dims, data):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(bytes(data))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", help="folder to write (created if missing)")
    args = parser.parse_args()
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("error: needs scikit-learn (pip install scikit-learn)")
    digits = load_digits()
    images = (digits.images * (255.0 / 16.0)).round().astype("uint8")
    train_x, test_x, train_y, test_y = train_test_split(images, digits.target, test_size=360, random_state=0,
                                                        stratify=digits.target)
    os.makedirs(args.directory, exist_ok=True)
    for prefix, x, y in (("train", train_x, train_y), ("t10k", test_x, test_y)):
        write_idx(os.path.join(args.directory, f"{prefix}-images-idx3-ubyte.gz"), 0x803, [len(x), 8, 8], x.reshape(-1))
        write_idx(os.path.join(args.directory, f"{prefix}-labels-idx1-ubyte.gz"), 0x801, [len(y)], y.astype("uint8"))
    print(f"wrote {len(train_x)} training and {len(test_x)} test digits to {args.directory}")


if __name__ == "__main__":
    main()
