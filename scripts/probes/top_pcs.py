"""Summarize ncu's source page (CSV, SASS): the header, then the 40 instructions with the most
warp-stall samples, each with its largest stall-reason columns."""
import csv, sys

rows = list(csv.reader(open(sys.argv[1], newline="", errors="replace")))
start = next(i for i, r in enumerate(rows) if any("Source" in c for c in r) and len(r) > 3)
head = rows[start]
print("columns:", head)
body = [r for r in rows[start + 1:] if len(r) == len(head)]
def num(s):
    try: return float(s.replace(",", ""))
    except ValueError: return 0.0
all_col = next((i for i, c in enumerate(head) if "Sampling (All" in c), None)
src_col = head.index("Source") if "Source" in head else 1
addr_col = next((i for i, c in enumerate(head) if "Address" in c), 0)
total = sum(num(r[all_col]) for r in body) if all_col is not None else 0
print(f"{len(body)} instructions, {total:.0f} samples")
reason_cols = [i for i, c in enumerate(head) if c.lower().startswith("stall") or "stalled" in c.lower() or c.startswith("smsp__pcsamp")]
print("reason columns:", [head[i] for i in reason_cols][:60])
if all_col is None: sys.exit()
# Totals per reason column over all instructions
tot = sorted(((sum(num(r[i]) for r in body), head[i]) for i in reason_cols), reverse=True)[:15]
print("reason totals:", [(n, round(v)) for v, n in tot])
for idx, r in sorted(enumerate(body), key=lambda t: -num(t[1][all_col]))[:45]:
    reasons = sorted(((num(r[i]), head[i]) for i in reason_cols if num(r[i]) > 0), reverse=True)[:3]
    print(f"#{idx:5d} {r[addr_col]:>8s} {100 * num(r[all_col]) / max(total, 1):5.1f}%  {r[src_col][:70]:70s} " +
          " ".join(f"{n.replace('smsp__pcsamp_warps_issue_stalled_', '')}={v:.0f}" for v, n in reasons))
