#!/usr/bin/env python3
"""Per-file pass/fail/not-run counts from the JUnit XML files run.sh writes.

usage: summary.py RESULTS_DIR [--tests]
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET

NOT_RUN = "not run: the Python openai package is not installed"


def main():
    d = sys.argv[1]
    show = "--tests" in sys.argv
    rows = []
    tot = [0, 0, 0, 0]
    for path in sorted(glob.glob(os.path.join(d, "*.xml"))):
        name = os.path.basename(path)[:-4] + ".py"
        p = f = nr = sk = 0
        lines = []
        for tc in ET.parse(path).getroot().iter("testcase"):
            tid = tc.get("name")
            kids = {c.tag: c for c in tc}
            if "failure" in kids or "error" in kids:
                # an error in teardown after a pass is still a failure
                f += 1
                el = kids["failure"] if "failure" in kids else kids["error"]
                msg = el.get("message", "")
                lines.append(f"  FAIL {tid}: {msg[:160]}")
            elif "skipped" in kids:
                msg = kids["skipped"].get("message", "")
                if NOT_RUN in msg:
                    nr += 1
                    lines.append(f"  NOT RUN {tid}")
                else:
                    sk += 1
                    lines.append(f"  SKIP {tid}: {msg[:120]}")
            else:
                p += 1
                lines.append(f"  pass {tid}")
        rows.append((name, p, f, nr, sk, lines))
        for i, v in enumerate((p, f, nr, sk)):
            tot[i] += v
    print(f"{'file':32} {'pass':>5} {'fail':>5} {'notrun':>6} {'skip':>5}")
    for name, p, f, nr, sk, lines in rows:
        print(f"{name:32} {p:5} {f:5} {nr:6} {sk:5}")
        if show:
            print("\n".join(lines))
    print(f"{'total':32} {tot[0]:5} {tot[1]:5} {tot[2]:6} {tot[3]:5}")


if __name__ == "__main__":
    main()
