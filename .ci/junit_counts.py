"""Passed, failed, errors and skipped per test file of a pytest junit.xml, as a Markdown table (the GPU check's
summary quotes it: how many cases each group contributed).

    python .ci/junit_counts.py junit.xml
"""
import sys
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict


def counts(junit):
    """{file: Counter(passed=, failed=, error=, skipped=)} from the testcases' classnames (tests.test_x.Class)."""
    by_file = defaultdict(Counter)
    for case in ET.parse(junit).iter("testcase"):
        parts = (case.get("classname") or "?").split(".")
        name = next((p for p in parts if p.startswith("test_")), parts[-1]) + ".py"
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        by_file[name]["failed" if outcome == "failure" else outcome] += 1
    return by_file


def main(argv):
    by_file = counts(argv[1])
    print("| file | passed | failed | errors | skipped |")
    print("|---|---|---|---|---|")
    total = Counter()
    for name in sorted(by_file):
        c = by_file[name]
        total += c
        print(f"| {name} | {c['passed']} | {c['failed']} | {c['error']} | {c['skipped']} |")
    print(f"| all | {total['passed']} | {total['failed']} | {total['error']} | {total['skipped']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
