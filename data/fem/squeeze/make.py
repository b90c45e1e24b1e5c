"""Deck and post-processing of the squeeze FEM case: a linear elastic sphere pressed between two
rigid plates along z, the reference of the deformable grain's contact checks (a sphere squeezed
by one pair of plates). An octant model (symmetry planes x = 0, y = 0, z = 0) against one rigid
plate at z = R moving down. Run by `cargo xtask fem squeeze`:

    python3 make.py         # meshes the octant with gmsh (C3D10, refined at the pole) and writes squeeze.inp
    ccx -i squeeze          # CalculiX
    python3 make.py post    # squeeze_plate.csv

and the same with `linear` after `make.py` (squeeze_linear.inp, .dat, _plate.csv): the same mesh
and loading without NLGEOM (small displacements and strains; the contact still follows the
plate), which separates the linear elasticity of the sphere from its geometric nonlinearity.
With `two` (two.inp, two_linear.inp with `two linear`): a second plate along x moving DELTA / 2
at the same time (the sphere pressed along two axes with unequal travels), both poles refined to
0.2 mm, node sets PLATEZ and PLATEX; `make.py post two [linear]` writes two[_linear]_plates.csv.

Units: mm, N, MPa. Radius 10, E = 1000, nu = 0.25 (the ball of data/fem/ball), rho = 1e-9.
The plate is a stiff C3D8 (E = 1000 x the sphere's, node set PLATE), held in x and y, moved down
by DELTA in INCREMENTS equal increments, NLGEOM: the two plates of the whole sphere approach by
2 DELTA = 0.6 mm, 6 % of the radius. Frictionless surface-to-surface
penalty contact, linear pressure-overclosure of slope 50 E / H_NEAR.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gmsh_tets import faces_where, grain_lines, refine_and_mesh  # noqa: E402

R = 10.0
E, NU, RHO = 1000.0, 0.25, 1.0e-9
DELTA = 0.3          # the plate's travel: the pole's approach to the centre plane
INCREMENTS = 20
H_FAR, H_NEAR = 2.5, 0.15
H_NEAR_TWO = 0.2     # two plates: two refined poles, a little coarser (penalty 50 E / 0.2)
PENALTY = 50.0 * E / H_NEAR


def deck(linear, two):
    """Meshes the octant and writes squeeze.inp (squeeze_linear.inp without NLGEOM; two.inp and
    two_linear.inp with the second plate)."""
    # (axis, label) of each plate: z alone, or z and x.
    plates = [(2, "Z"), (0, "X")] if two else [(2, "")]
    import gmsh
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("octant")
    ball = gmsh.model.occ.addSphere(0, 0, 0, R)
    box = gmsh.model.occ.addBox(0, 0, 0, 2 * R, 2 * R, 2 * R)
    gmsh.model.occ.intersect([(3, ball)], [(3, box)])
    gmsh.model.occ.synchronize()
    poles = [gmsh.model.occ.addPoint(*[R if d == ax else 0.0 for d in range(3)]) for ax, _ in plates]
    gmsh.model.occ.synchronize()
    # Fine within the largest contact radius (sqrt(R DELTA) = 1.7 mm) and a margin.
    xyz, tets = refine_and_mesh(gmsh, poles, H_NEAR_TWO if two else H_NEAR, H_FAR, 2.0, 5.0)
    gmsh.finalize()

    out = []
    w = out.append
    w("*HEADING\nSphere octant squeezed by a rigid plate along z (data/fem/squeeze/make.py)")
    lines, used = grain_lines(xyz, tets, "GRAIN")
    out.extend(lines)
    n_sphere = len(xyz)

    def on_sphere(i):
        p = xyz[i - 1]
        return abs(sum(c * c for c in p) ** 0.5 - R) < 1e-6 * R
    # Only the faces near a pole can touch its plate.
    slaves = {ax: faces_where(tets, lambda i, ax=ax: on_sphere(i) and xyz[i - 1][ax] > 0.8 * R)
              for ax, _ in plates}

    # Each plate: one C3D8, inner face (nodes 1-4, face S1) on the plane x_axis = R; 1-2-3-4
    # counter-clockwise seen from outside along the axis, 5-8 beyond them: a positive volume,
    # and face S1 facing the sphere.
    node = n_sphere
    for k, (ax, label) in enumerate(plates):
        u, v = (ax + 1) % 3, (ax + 2) % 3
        ids = []
        for depth in (0.0, 0.5 * R):
            for (a, b) in [(-0.2, -0.2), (1.2, -0.2), (1.2, 1.2), (-0.2, 1.2)]:
                node += 1
                ids.append(node)
                p = [0.0, 0.0, 0.0]
                p[ax], p[u], p[v] = R + depth, a * R, b * R
                w(f"*NODE, NSET=PLATE{label}\n{node}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}")
        inner, outer = ids[:4], ids[4:]
        w(f"*ELEMENT, TYPE=C3D8, ELSET=WALL{label}\n{len(tets) + k + 1}, " + ", ".join(map(str, inner + outer)))
        w(f"*SURFACE, NAME=MASTER{label}\nWALL{label}, S1")

    def nset(name, members):
        w(f"*NSET, NSET={name}")
        for k in range(0, len(members), 12):
            w(", ".join(map(str, members[k:k + 12])))

    for axis, label in enumerate("XYZ"):
        nset(f"SYM{label}", [i + 1 for i in range(n_sphere) if i + 1 in used and abs(xyz[i][axis]) < 1e-9])
    if not two:
        pole_node = min((i for i in range(n_sphere) if i + 1 in used), key=lambda i: xyz[i][0] ** 2 + xyz[i][1] ** 2 + (xyz[i][2] - R) ** 2)
        nset("POLE", [pole_node + 1])
    for ax, label in plates:
        w(f"*SURFACE, NAME=SLAVE{label}, TYPE=ELEMENT")
        for e, s in slaves[ax]:
            w(f"{e}, S{s}")
    w(f"*MATERIAL, NAME=GRAIN\n*ELASTIC\n{E}, {NU}\n*DENSITY\n{RHO:e}")
    w(f"*MATERIAL, NAME=STIFF\n*ELASTIC\n{1e3 * E}, 0.3\n*DENSITY\n{RHO:e}")
    w("*SOLID SECTION, ELSET=GRAIN, MATERIAL=GRAIN")
    for _, label in plates:
        w(f"*SOLID SECTION, ELSET=WALL{label}, MATERIAL=STIFF")
    for _, label in plates:
        w(f"*CONTACT PAIR, INTERACTION=SI, TYPE=SURFACE TO SURFACE\nSLAVE{label}, MASTER{label}")
    penalty = 50.0 * E / H_NEAR_TWO if two else PENALTY
    w(f"*SURFACE INTERACTION, NAME=SI\n*SURFACE BEHAVIOR, PRESSURE-OVERCLOSURE=LINEAR\n{penalty:.6e}")
    w(f"*STEP{'' if linear else ', NLGEOM'}, INC=1000\n*STATIC, DIRECT\n{1.0 / INCREMENTS}, 1.0")
    w("*BOUNDARY\nSYMX, 1, 1, 0.\nSYMY, 2, 2, 0.\nSYMZ, 3, 3, 0.")
    for ax, label in plates:
        travel = DELTA if ax == 2 else DELTA / 2
        w("\n".join(f"PLATE{label}, {d + 1}, {d + 1}, 0." for d in range(3) if d != ax))
        w(f"PLATE{label}, {ax + 1}, {ax + 1}, {-travel}")
    for _, label in plates:
        w(f"*NODE PRINT, NSET=PLATE{label}, TOTALS=ONLY\nRF")
    w("*EL PRINT, ELSET=GRAIN, TOTALS=ONLY\nELSE")
    w("*END STEP")
    name = ("two" if two else "squeeze") + ("_linear" if linear else "") + ".inp"
    open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "w").write("\n".join(out) + "\n")
    print(f"{name}: {len(used)} grain nodes, {len(tets)} C3D10, {sum(map(len, slaves.values()))} contact faces", file=sys.stderr)


def post(linear):
    """squeeze_plate.csv from squeeze.dat (squeeze_linear_...): per increment the plate's travel (towards the centre),
    the z component of the plate's reaction total (CalculiX's RF: the force the prescribed
    displacement takes, negative while the plate presses the grain down), for the octant and for
    the whole sphere (x 4: an octant carries a quarter of the plate's force), and the octant's
    strain energy."""
    import re
    job = "squeeze_linear" if linear else "squeeze"
    text = open(f"{job}.dat").read()
    times = [float(t) for t in re.findall(r"total force \(fx,fy,fz\) for set PLATE and time\s+(\S+)", text)]
    fz = [float(m) for m in re.findall(r"total force \(fx,fy,fz\) for set PLATE and time\s+\S+\s+\S+\s+\S+\s+(\S+)", text)]
    energy = [float(e) for e in re.findall(r"total internal energy for set GRAIN and time\s+\S+\s+(\S+)", text)]
    rows = ["increment,travel,force_octant,force_sphere,strain_energy_octant"]
    for i, t in enumerate(times):
        rows.append(f"{i + 1},{DELTA * t:.7e},{fz[i]:.7e},{4.0 * fz[i]:.7e},{energy[i]:.7e}")
    open(f"{job}_plate.csv", "w").write("\n".join(rows) + "\n")
    print(f"{job}_plate.csv: {len(times)} increments", file=sys.stderr)


def post_two(linear):
    """two[_linear]_plates.csv from two[_linear].dat: per increment each plate's travel towards
    the centre and the component of its reaction total along its axis, for the whole sphere (x 4
    the octant's; negative while it presses the grain)."""
    import re
    job = "two_linear" if linear else "two"
    text = open(f"{job}.dat").read()
    pattern = r"total force \(fx,fy,fz\) for set PLATE{} and time\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
    z = re.findall(pattern.format("Z"), text)
    x = re.findall(pattern.format("X"), text)
    rows = ["increment,travel_z,force_z_sphere,travel_x,force_x_sphere"]
    for i, (mz, mx) in enumerate(zip(z, x)):
        t = float(mz[0])
        rows.append(f"{i + 1},{DELTA * t:.7e},{4.0 * float(mz[3]):.7e},{DELTA / 2 * t:.7e},{4.0 * float(mx[1]):.7e}")
    open(f"{job}_plates.csv", "w").write("\n".join(rows) + "\n")
    print(f"{job}_plates.csv: {len(rows) - 1} increments", file=sys.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    linear, two = "linear" in args, "two" in args
    if "post" in args:
        post_two(linear) if two else post(linear)
    else:
        deck(linear, two)
