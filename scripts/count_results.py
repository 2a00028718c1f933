"""count_results.py: add up JUnit XML files and the fuzz log into one 'N passed, N failed' line."""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET


def junit_counts(path):
    passed = failed = skipped = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            print(f"FAILED {os.path.basename(path)}: {case.get('classname', '')}::{case.get('name')}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    results, n_failed_stages, stages = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    passed = failed = skipped = 0
    for path in sorted(glob.glob(os.path.join(results, "*.xml"))):
        p, f, s = junit_counts(path)
        print(f"{os.path.basename(path):20s} {p:5d} passed {f:5d} failed {s:5d} skipped")
        passed, failed, skipped = passed + p, failed + f, skipped + s
    fuzz = os.path.join(results, "fuzz.log")
    if os.path.exists(fuzz):
        m = re.search(r"^fuzz: (\d+) passed, (\d+) failed", open(fuzz).read(), re.M)
        if m:
            print(f"{'fuzz targets':20s} {m.group(1):>5s} passed {m.group(2):>5s} failed")
            passed, failed = passed + int(m.group(1)), failed + int(m.group(2))
    # A stage that failed without a test reporting it (a build, an install) counts once.
    for stage in stages:
        print(f"stage failed: {stage}")
    unreported = n_failed_stages if failed == 0 else 0
    failed += unreported
    line = f"summary: {passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    sys.exit(1 if failed or n_failed_stages else 0)


main()
