"""Compares a squeeze table (squeeze_plate.csv or squeeze_linear_plate.csv) with Hertz's force
for a sphere on a rigid plate, F = 4/3 E* sqrt(R) delta^(3/2), E* = E / (1 - nu^2), and with Hertz
plus the exact linear sphere's body compliance beyond the half space: delta = (F / K)^(2/3) +
kappa(a) F / (E R), kappa the series remainder of data/reference/sphere_series.py (the pole's
patch-weighted inward displacement under two opposite patch loads less the half space's,
3 (1 - nu^2) / (5 rho E)), taken at the patch radius rho = a = sqrt(R (F/K)^(2/3)) and held
below 1 mm. `python3 compare.py squeeze_linear_plate.csv` prints both deviations per increment.
"""
import csv
import math
import sys
E, NU, R = 1000.0, 0.25, 10.0
Es = E / (1 - NU**2)
# series remainder (self-regular + cross, patch-weighted) x F/(E R), by patch radius (sphere_series.py)
kap = [(1.0, -0.23527), (2.0, -0.25510), (3.0, -0.26061)]
def kappa(a):
    if a <= 1.0: return kap[0][1]
    for (r0, k0), (r1, k1) in zip(kap, kap[1:]):
        if a <= r1: return k0 + (k1 - k0) * (a - r0) / (r1 - r0)
    return kap[-1][1]
rows = list(csv.DictReader(open(sys.argv[1])))
fmax = max(-float(r['force_sphere']) for r in rows)
print("incr travel  F_fem       F_hertz    fem/hertz-1   F_model   fem/model-1")
for r in rows:
    d = float(r['travel']); f = -float(r['force_sphere'])
    fh = 4 / 3 * Es * math.sqrt(R) * d**1.5
    # model: d = (F/K)^(2/3) + kappa F/(E R), K = 4/3 E* sqrt(R)
    K = 4 / 3 * Es * math.sqrt(R)
    lo, hi = 0.0, 10 * fh
    for _ in range(200):
        m = 0.5 * (lo + hi)
        a = math.sqrt(R * (m / K) ** (2 / 3))
        g = (m / K) ** (2 / 3) + kappa(a) * m / (E * R) - d
        lo, hi = (m, hi) if g < 0 else (lo, m)
    fm = 0.5 * (lo + hi)
    flag = "" if f >= 0.1 * fmax else " (<10% max)"
    print(f"{r['increment']:>4} {d:.4f} {f:10.4f} {fh:10.4f} {100*(f/fh-1):+7.2f}% {fm:10.4f} {100*(f/fm-1):+7.2f}%{flag}")
