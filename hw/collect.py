#!/usr/bin/env python3
"""Turns hw/run.sh's ncu-raw.txt into counters.csv, one row per case of hw/cases.txt:
`case` (the case line) then one column per metric, in the order ncu gave them.

ncu-raw.txt holds ncu's `--csv --page raw` output in sections:
- `### all (ncu exit RC)`: one process ran every case in order; its kernel rows, in launch
  order, are the cases in order (used only when there are exactly as many rows as cases);
- `### case N: LINE (ncu exit RC)`: one process ran one case (a later section wins).
A case with no row gets empty metric columns.

    collect.py CASES RAW OUT        writes OUT
    collect.py --check CASES RAW    exits 0 when every case has a row
"""
import csv
import io
import re
import sys


def case_lines(path):
    out = []
    for line in open(path, encoding="utf-8"):
        line = " ".join(line.split())
        if line and not line.startswith("#"):
            out.append(line)
    return out


def rows(csv_text):
    """The header and the data rows of ncu's raw page (the units row dropped)."""
    lines = [l for l in csv_text.splitlines() if l.startswith('"')]
    if not lines:
        return None, []
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    header, data = table[0], table[1:]
    data = [r for r in data if r and r[0].strip().isdigit()]
    return header, [dict(zip(header, r)) for r in data]


def collect(cases, text):
    """{case line: ncu row} and the metric names in order."""
    found, metrics = {}, []
    parts = re.split(r"^### (.*) \(ncu exit -?\d+\)$", text, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        title, body = parts[i].strip(), parts[i + 1]
        header, data = rows(body)
        if header is None:
            continue
        for h in header:
            # The metrics asked for (ncu's raw page also lists every device attribute).
            if h.startswith(("l1tex__", "smsp__", "sm__", "gpu__", "launch__", "lts__")) and h not in metrics:
                metrics.append(h)
        if title == "all":
            if len(data) == len(cases):
                found.update(zip(cases, data))
            else:
                print(f"all cases in one run: {len(data)} rows for {len(cases)} cases, not used",
                      file=sys.stderr)
        else:
            m = re.match(r"case \d+: (.*)$", title)
            if m and data:
                if len(data) != 1:
                    print(f"`{m.group(1)}`: {len(data)} kernel rows, the first kept", file=sys.stderr)
                found[" ".join(m.group(1).split())] = data[0]
    return found, metrics


def main():
    if sys.argv[1] == "--check":
        cases = case_lines(sys.argv[2])
        found, _ = collect(cases, open(sys.argv[3], encoding="utf-8", errors="replace").read())
        sys.exit(0 if all(c in found for c in cases) else 1)
    cases = case_lines(sys.argv[1])
    found, metrics = collect(cases, open(sys.argv[2], encoding="utf-8", errors="replace").read())
    with open(sys.argv[3], "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["case"] + metrics)
        for c in cases:
            row = found.get(c, {})
            if not row:
                print(f"no counters for `{c}`", file=sys.stderr)
            w.writerow([c] + [row.get(m, "").replace(",", "") for m in metrics])
    print(f"{len(cases)} cases, {sum(c in found for c in cases)} with counters, "
          f"{len(metrics)} metrics -> {sys.argv[3]}")


if __name__ == "__main__":
    main()
