"""Compares a squeeze table with Hertz's force and with Hertz plus the linear elastic sphere's body
compliance, per plate and increment.

    python3 compare.py squeeze_plate.csv        # one pair of plates (also squeeze_linear_plate.csv)
    python3 compare.py two_plates.csv           # two pairs, along z and x (also two_linear_plates.csv)

Hertz, a sphere on a rigid plate: F = K delta^(3/2), K = 4/3 E* sqrt(R), E* = E / (1 - nu^2).
The body's compliance (data/reference/sphere_series.py, the exact linear elastic sphere), in units
of F / (E R), for patches of radius rho = a = sqrt(R (F / K)^(2/3)) (held within 1 to 3 mm):
- `kappa(a)`: a pair of plates' own, the pole's patch-weighted inward displacement under the two
  opposite patch loads less the half space's 3 (1 - nu^2) / (5 rho E): -0.235 to -0.261;
- `CROSS`: the other pair's, the inward displacement at a pole under the two patch loads of the
  perpendicular axis (rho = 3): -0.1434908 (the equator bulges).
Each plate's travel is then delta = (F / K)^(2/3) + (kappa F + CROSS F_other) / (E R); the models
solve these for the forces: "Hertz + cross" leaves kappa out, "Hertz + body + cross" keeps it.
"""
import csv
import math
import sys

E, NU, R = 1000.0, 0.25, 10.0
K = 4 / 3 * E / (1 - NU**2) * math.sqrt(R)
KAPPA = [(1.0, -0.23527), (2.0, -0.25510), (3.0, -0.26061)]
CROSS = -0.1434908


def kappa(a):
    if a <= KAPPA[0][0]:
        return KAPPA[0][1]
    for (r0, k0), (r1, k1) in zip(KAPPA, KAPPA[1:]):
        if a <= r1:
            return k0 + (k1 - k0) * (a - r0) / (r1 - r0)
    return KAPPA[-1][1]


def hertz(d):
    return K * max(d, 0.0) ** 1.5


def forces(travels, body):
    """The plates' forces for their travels (one per pair), with or without the pairs' own
    body compliance; the other pairs' always."""
    f = [hertz(d) for d in travels]
    for _ in range(400):
        new = []
        for i, d in enumerate(travels):
            own = kappa(math.sqrt(R * (f[i] / K) ** (2 / 3))) * f[i] if body else 0.0
            other = sum(CROSS * f[j] for j in range(len(f)) if j != i)
            new.append(0.5 * f[i] + 0.5 * hertz(d - (own + other) / (E * R)))
        f = new
    return f


rows = list(csv.DictReader(open(sys.argv[1])))
two = "travel_x" in rows[0]
axes = [("travel_z", "force_z_sphere"), ("travel_x", "force_x_sphere")] if two else [("travel", "force_sphere")]
largest = [max(abs(float(r[f])) for r in rows) for _, f in axes]
print("increment | FEM force per plate | against Hertz | Hertz + cross | Hertz + body + cross")
worst = [0.0, 0.0, 0.0]
for r in rows:
    travels = [float(r[t]) for t, _ in axes]
    fem = [abs(float(r[f])) for _, f in axes]
    models = [[hertz(d) for d in travels], forces(travels, False), forces(travels, True)]
    cells = [" ".join(f"{100 * (a / b - 1):+6.2f}%" for a, b in zip(fem, m)) for m in models]
    small = any(f < 0.1 * big for f, big in zip(fem, largest))
    if not small:
        for k, m in enumerate(models):
            worst[k] = max([worst[k]] + [abs(a / b - 1) for a, b in zip(fem, m)])
    print(f"{r['increment']:>4} | " + " ".join(f"{f:8.2f}" for f in fem) + " | " + " | ".join(cells)
          + (" (below 10 % of the largest force)" if small else ""))
print("largest |deviation| past 10 % of the largest force: Hertz {:.2f} %, Hertz + cross {:.2f} %, "
      "Hertz + body + cross {:.2f} %".format(*[100 * w for w in worst]))
