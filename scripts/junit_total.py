"""Sum the JUnit XML reports of scripts/test.sh's pytest passes into one closing line.

    python scripts/junit_total.py REPORT.xml [REPORT.xml ...]

Prints ``suite: N passed, N failed, N skipped`` (errors count as failed), then one line per
skip reason.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import Counter


def main(paths: list[str]) -> int:
    passed = failed = 0
    skips: Counter[str] = Counter()
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            print(f"suite: cannot read {path}: {e}", file=sys.stderr)
            failed += 1
            continue
        for case in root.iter("testcase"):
            outcome = {child.tag for child in case}
            if outcome & {"failure", "error"}:
                failed += 1
            elif "skipped" in outcome:
                skips[case.find("skipped").get("message", "")] += 1
            else:
                passed += 1
    print(f"suite: {passed} passed, {failed} failed, {sum(skips.values())} skipped")
    for reason, n in skips.most_common():
        print(f"  skipped {n} x {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
