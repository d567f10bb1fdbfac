"""Fail the GPU check when tests were skipped beyond the documented list (tests/gpu_skips.txt): a broken driver,
a missing library or a test that silently stopped running shows up as skips, not failures.

    python .ci/check_skips.py junit.xml [tests/gpu_skips.txt]

Prints one line per skip reason (count, allowed) and exits 1 if any reason is not listed or exceeds its count.
"""
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def allowed(path):
    """[(most, reason)] from the list: '<most><TAB><reason>' lines, '#' comments."""
    rules = []
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            most, _, reason = line.partition("\t")
            rules.append((int(most), reason.strip()))
    return rules


def skips(junit):
    return Counter((el.get("message") or "").strip() for el in ET.parse(junit).iter("skipped"))


def main(argv):
    junit = argv[1]
    rules = allowed(argv[2] if len(argv) > 2 else ROOT / "tests" / "gpu_skips.txt")
    used, bad = Counter(), []
    for message, count in sorted(skips(junit).items()):
        rule = next((r for r in rules if r[1] in message), None)
        if rule is None:
            bad.append(f"{count} skipped, not in the list: {message!r}")
            continue
        used[rule] += count
    for (most, reason), count in used.items():
        print(f"{count:5} skipped (at most {most}): {reason}")
        if count > most:
            bad.append(f"{count} skipped, more than the {most} allowed: {reason!r}")
    for line in bad:
        print("NOT ALLOWED:", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
