"""Top stalled SASS lines of an ncu source page (CSV), plus every HGMMA/TRYWAIT/DEPBAR/UTMA line."""
import csv, sys, io
text = open(sys.argv[1]).read()
start = text.find('"Address"') if '"Address"' in text else text.find('"#"')
rows = list(csv.reader(io.StringIO(text[start:])))
head = rows[0]
print("columns:", head[:12])
src = next(i for i, h in enumerate(head) if h.strip() == "Source")
def col(name):
    for i, h in enumerate(head):
        if h.strip().startswith(name):
            return i
    return None
allc, notc, exe = col("Warp Stall Sampling (All"), col("Warp Stall Sampling (Not"), col("Instructions Executed")
def num(r, i):
    try: return float(r[i].replace(",", "")) if i is not None and r[i] else 0.0
    except ValueError: return 0.0
body = [r for r in rows[1:] if len(r) > src]
total = sum(num(r, allc) for r in body) or 1
print(f"total samples {total:.0f}")
print("--- top 30 by all samples")
for r in sorted(body, key=lambda r: -num(r, allc))[:30]:
    print(f"{100*num(r, allc)/total:5.1f}% notiss {100*num(r, notc)/total:5.1f}% exe {num(r, exe):9.0f}  {r[0]} {r[src][:90]}")
print("--- key instructions")
for r in body:
    if any(k in r[src] for k in ("HGMMA", "TRYWAIT", "DEPBAR", "UTMALDG", "SYNCS.ARRIVE", "BAR.SYNC", "BAR.ARV")):
        print(f"{100*num(r, allc)/total:5.1f}% exe {num(r, exe):9.0f}  {r[0]} {r[src][:100]}")
