#!/usr/bin/env python3
"""Regenerates the space-time diagrams in docs/schedules/*.md: every block

    <!-- pipetwin show ARGS -->
    ```text
    (anything)
    ```

gets the output of `build/bin/pipetwin show ARGS`. Run after changing a schedule:
    python3 docs/schedules/update_diagrams.py [--pipetwin PATH] [--check]
--check exits 1 if a page is out of date instead of rewriting it.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BLOCK = re.compile(r"(<!-- pipetwin show (?P<args>.*?) -->\n```text\n)(?P<body>.*?)(```)", re.S)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipetwin", default=os.path.join(ROOT, "build", "bin", "pipetwin"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for page in sorted(glob.glob(os.path.join(HERE, "*.md"))):
        text = open(page).read()

        def render(match):
            done = subprocess.run([args.pipetwin, "show"] + shlex.split(match.group("args")),
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{os.path.basename(page)}: pipetwin show {match.group('args')}: {done.stderr.strip()}")
            return match.group(1) + done.stdout + match.group(4)

        updated = BLOCK.sub(render, text)
        if updated != text:
            stale.append(os.path.basename(page))
            if not args.check:
                open(page, "w").write(updated)
    if args.check and stale:
        sys.exit("out of date: " + ", ".join(stale))
    print(("out of date: " if args.check else "updated: ") + (", ".join(stale) or "nothing"))


if __name__ == "__main__":
    main()
