"""Deck and post-processing of the egg FEM cases: a linear elastic ellipsoid (semi-axes 10, 8 and
6 mm) pressed between two rigid plates along one of its axes, the reference of the deformable
grain's checks on a shape that is not a sphere and a Poisson's ratio that is not the ball's. An
octant model (symmetry planes x = 0, y = 0, z = 0) against one rigid plate at the tip of the
loaded axis, moving in. Small strain (no NLGEOM): the grain's body in the solver is linear. Run
by `cargo xtask fem egg`:

    python3 make.py x        # meshes the octant with gmsh (C3D10, refined at the x tip): egg_x.inp
    ccx -i egg_x             # CalculiX
    python3 make.py post x   # egg_x_plate.csv

and the same with `y` and `z`. The whole ellipsoid's mesh for the grain's modes is `whole.inp`
(`python3 make.py whole`, uniform size 2).

Units: mm, N, MPa. E = 1000, nu = 0.3, rho = 1e-9. The plate is a stiff C3D8 (E = 1000 x the
egg's, node set PLATE), held across its axis, moved in by DELTA in INCREMENTS equal increments:
the two plates of the whole egg approach by 2 DELTA. Frictionless surface-to-surface penalty
contact, linear pressure-overclosure of slope 50 E / H_NEAR.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gmsh_tets import c3d10, faces_where, grain_lines, refine_and_mesh  # noqa: E402

AXES = (10.0, 8.0, 6.0)
E, NU, RHO = 1000.0, 0.3, 1.0e-9
DELTA = 0.2
INCREMENTS = 20
H_FAR, H_NEAR = 2.5, 0.15
PENALTY = 50.0 * E / H_NEAR
HERE = os.path.dirname(os.path.abspath(__file__))


def ellipsoid(gmsh):
    """The whole ellipsoid as the current model's volume."""
    ball = gmsh.model.occ.addSphere(0, 0, 0, 1.0)
    gmsh.model.occ.dilate([(3, ball)], 0, 0, 0, *AXES)
    return ball


def on_surface(p):
    return abs(sum((c / a) ** 2 for c, a in zip(p, AXES)) - 1.0) < 1e-6


def whole():
    """whole.inp: the whole ellipsoid, C3D10 of uniform size 2, for the grain's free modes."""
    import gmsh
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.option.setNumber("Mesh.RandomSeed", 1)
    gmsh.model.add("egg")
    ellipsoid(gmsh)
    gmsh.model.occ.synchronize()
    gmsh.option.setNumber("Mesh.MeshSizeMin", 2.0)
    gmsh.option.setNumber("Mesh.MeshSizeMax", 2.0)
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    xyz, tets = c3d10(gmsh)
    gmsh.finalize()
    lines, used = grain_lines(xyz, tets, "EGG")
    out = [f"*HEADING\nWhole ellipsoid, semi-axes {AXES} mm, C3D10 of size 2 (data/fem/egg/make.py)"] + lines
    out += ["*MATERIAL, NAME=SOLID", "*ELASTIC", f"{E}, {NU}", "*DENSITY", f"{RHO}",
            "*SOLID SECTION, ELSET=EGG, MATERIAL=SOLID"]
    open(os.path.join(HERE, "whole.inp"), "w").write("\n".join(out) + "\n")
    print(f"whole.inp: {len(used)} nodes, {len(tets)} C3D10", file=sys.stderr)


# The loadings: a label and the plate's inward-facing direction `n` (unit; the plate is the
# plane n . x = h(n), h the ellipsoid's support distance, moving in along -n). Along an axis, the
# tip sits on two symmetry planes (the whole plate carries 4 x the octant's force). Oblique, in
# the x-z plane: a frictionless plate pressing off an axis puts a couple on the grain (its
# contact point x_c = A^2 n / h is not on the line of its force), so one pair of plates would
# need the grain's rotation held, which an FEM model can only do by constraints of its own; the
# egg is pressed by two pairs at once, along (0.6, 0, 0.8) and (0.6, 0, -0.8), whose couples
# cancel: symmetric about the three planes, an octant holds one plate, its contact point on
# y = 0 (the whole plate carries 2 x the octant's force).
LOADINGS = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0),
            "xz": (0.6, 0.0, 0.8)}


def support(n):
    """The contact point x_c = A^2 n / h and the support distance h = |A n| of direction n."""
    h = sum((a * c) ** 2 for a, c in zip(AXES, n)) ** 0.5
    return [a * a * c / h for a, c in zip(AXES, n)], h


def plate_frame(n):
    """In-plane axes (t_a, t_b) of a plate with normal n, t_a x t_b = n, and the plate's extent
    along each ((lo, hi) from the contact point): for an axis, the next two axes over the
    octant's face and a fifth beyond it; oblique, y across and the x-z plane's direction along."""
    if n in [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]:
        ax = n.index(1.0)
        u, v = (ax + 1) % 3, (ax + 2) % 3
        unit = lambda d: [1.0 if i == d else 0.0 for i in range(3)]  # noqa: E731
        return (unit(u), (-0.2 * AXES[u], 1.2 * AXES[u])), (unit(v), (-0.2 * AXES[v], 1.2 * AXES[v]))
    t_b = [0.0, 1.0, 0.0]
    t_a = [n[2], 0.0, -n[0]]  # t_a x t_b = n for n in the x-z plane
    return (t_a, (-6.0, 6.0)), (t_b, (-0.2 * AXES[1], 1.2 * AXES[1]))


def deck(label):
    """Meshes the octant and writes egg_<label>.inp, the plate of LOADINGS[label]."""
    import gmsh
    n = LOADINGS[label]
    tip, h = support(n)
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("octant")
    egg = ellipsoid(gmsh)
    box = gmsh.model.occ.addBox(0, 0, 0, 2 * AXES[0], 2 * AXES[0], 2 * AXES[0])
    gmsh.model.occ.intersect([(3, egg)], [(3, box)])
    gmsh.model.occ.synchronize()
    point = gmsh.model.occ.addPoint(*tip)
    gmsh.model.occ.synchronize()
    xyz, tets = refine_and_mesh(gmsh, [point], H_NEAR, H_FAR, 2.0, 5.0)
    gmsh.finalize()

    out = []
    w = out.append
    w(f"*HEADING\nEllipsoid octant squeezed by a rigid plate along {label} (data/fem/egg/make.py)")
    lines, used = grain_lines(xyz, tets, "GRAIN")
    out.extend(lines)
    n_grain = len(xyz)
    slaves = faces_where(tets, lambda i: on_surface(xyz[i - 1])
                         and sum(c * x for c, x in zip(n, xyz[i - 1])) > 0.8 * h)
    # The plate: one C3D8, inner face (nodes 1-4, face S1) on the plane n . x = h.
    (t_a, (a0, a1)), (t_b, (b0, b1)) = plate_frame(n)
    ids = []
    node = n_grain
    for depth in (0.0, 0.5 * h):
        for (a, b) in [(a0, b0), (a1, b0), (a1, b1), (a0, b1)]:
            node += 1
            ids.append(node)
            p = [x + depth * c + a * ta + b * tb for x, c, ta, tb in zip(tip, n, t_a, t_b)]
            w(f"*NODE, NSET=PLATE\n{node}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}")
    w(f"*ELEMENT, TYPE=C3D8, ELSET=WALL\n{len(tets) + 1}, " + ", ".join(map(str, ids)))
    w("*SURFACE, NAME=MASTER\nWALL, S1")

    def nset(name, members):
        w(f"*NSET, NSET={name}")
        for k in range(0, len(members), 12):
            w(", ".join(map(str, members[k:k + 12])))

    for axis, name in enumerate("XYZ"):
        nset(f"SYM{name}", [i + 1 for i in range(n_grain) if i + 1 in used and abs(xyz[i][axis]) < 1e-9])
    w("*SURFACE, NAME=SLAVE, TYPE=ELEMENT")
    for e, s in slaves:
        w(f"{e}, S{s}")
    w(f"*MATERIAL, NAME=GRAIN\n*ELASTIC\n{E}, {NU}\n*DENSITY\n{RHO:e}")
    w(f"*MATERIAL, NAME=STIFF\n*ELASTIC\n{1e3 * E}, 0.3\n*DENSITY\n{RHO:e}")
    w("*SOLID SECTION, ELSET=GRAIN, MATERIAL=GRAIN")
    w("*SOLID SECTION, ELSET=WALL, MATERIAL=STIFF")
    w("*CONTACT PAIR, INTERACTION=SI, TYPE=SURFACE TO SURFACE\nSLAVE, MASTER")
    w(f"*SURFACE INTERACTION, NAME=SI\n*SURFACE BEHAVIOR, PRESSURE-OVERCLOSURE=LINEAR\n{PENALTY:.6e}")
    w(f"*STEP, INC=1000\n*STATIC, DIRECT\n{1.0 / INCREMENTS}, 1.0")
    w("*BOUNDARY\nSYMX, 1, 1, 0.\nSYMY, 2, 2, 0.\nSYMZ, 3, 3, 0.")
    w("\n".join(f"PLATE, {d + 1}, {d + 1}, 0." for d in range(3) if n[d] == 0.0))
    w("\n".join(f"PLATE, {d + 1}, {d + 1}, {-DELTA * n[d]}" for d in range(3) if n[d] != 0.0))
    w("*NODE PRINT, NSET=PLATE, TOTALS=ONLY\nRF")
    w("*END STEP")
    name = f"egg_{label}.inp"
    open(os.path.join(HERE, name), "w").write("\n".join(out) + "\n")
    print(f"{name}: {len(used)} grain nodes, {len(tets)} C3D10, {len(slaves)} contact faces", file=sys.stderr)


def post(label):
    """egg_<label>_plate.csv from egg_<label>.dat: per increment the plate's travel (towards the
    centre) and the component of its reaction total along its direction n, for the octant and for
    the whole egg's plate (x 4 along an axis, x 2 oblique: the symmetry planes through its
    contact point; negative while the plate presses the grain). The column keeps its first name,
    force_sphere."""
    import re
    n = LOADINGS[label]
    whole = 2.0 ** sum(1 for c in n if c == 0.0)
    text = open(os.path.join(HERE, f"egg_{label}.dat")).read()
    found = re.findall(r"total force \(fx,fy,fz\) for set PLATE and time\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", text)
    rows = ["increment,travel,force_octant,force_sphere"]
    for i, m in enumerate(found):
        t = float(m[0])
        f = sum(c * float(x) for c, x in zip(n, m[1:]))
        rows.append(f"{i + 1},{DELTA * t:.7e},{f:.7e},{whole * f:.7e}")
    open(os.path.join(HERE, f"egg_{label}_plate.csv"), "w").write("\n".join(rows) + "\n")
    print(f"egg_{label}_plate.csv: {len(found)} increments", file=sys.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["whole"]:
        whole()
    elif args[:1] == ["post"]:
        post(args[1])
    else:
        deck(args[0])
