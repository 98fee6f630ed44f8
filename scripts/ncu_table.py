"""Reads `ncu --csv` output on stdin and prints the first profiled kernel's name and one line per
metric (name, value, unit): the tables scripts/square_ncu.sh and scripts/batched_ncu.sh print."""
import csv
import sys

rows = [r for r in csv.reader(sys.stdin) if len(r) > 10]
h = rows[0]
i, u, v, k = (h.index(x) for x in ("Metric Name", "Metric Unit", "Metric Value", "Kernel Name"))
print("  kernel", rows[1][k][:70])
for r in rows[1:]:
    print("  %-78s %16s %s" % (r[i], r[v], r[u]))
