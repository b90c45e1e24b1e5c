"""Deck of the sphere-compaction FEM case (a): a linear elastic sphere squeezed by six rigid walls,
modelled as an octant (symmetry planes x = 0, y = 0, z = 0) against three rigid plates that move
towards the centre. Meshed with gmsh (C3D10, refined at the three contact points); CalculiX solves
it. Run by `cargo xtask fem sphere` (writes sphere.inp; xtask then runs ccx).

Units: mm, N, MPa. Radius 10 (the paper's voxel sphere), E = 1000, nu = 0.3.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gmsh_tets import faces_where, grain_lines, refine_and_mesh  # noqa: E402
import gmsh

R = 10.0
E, NU, RHO = 1000.0, 0.3, 1.0e-9
DELTA = 1.65         # final wall displacement: 16.5 % of the radius (just beyond the paper's 16 %: see data/fem/README.md)
FIRST = 0.1         # the first step reaches this wall displacement in 10 increments (Hertz range)
H_FAR, H_NEAR = 2.5, 0.12
PENALTY = 50.0 * E / H_NEAR  # linear pressure-overclosure slope (docs/physics.md section 9)

def deck():
    """Meshes the octant and writes sphere.inp."""
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("octant")
    ball = gmsh.model.occ.addSphere(0, 0, 0, R)
    box = gmsh.model.occ.addBox(0, 0, 0, 2 * R, 2 * R, 2 * R)
    gmsh.model.occ.intersect([(3, ball)], [(3, box)])
    gmsh.model.occ.synchronize()
    # Finer elements near the three contact points.
    poles = [gmsh.model.occ.addPoint(*p) for p in [(R, 0, 0), (0, R, 0), (0, 0, R)]]
    gmsh.model.occ.synchronize()
    xyz, tets = refine_and_mesh(gmsh, poles, H_NEAR, H_FAR, (R * FIRST) ** 0.5, 0.5 * R)
    gmsh.finalize()

    out = []
    w = out.append
    w("*HEADING\nSphere octant squeezed by three rigid walls (data/fem/sphere/make.py)")
    lines, used = grain_lines(xyz, tets, "GRAIN")
    out.extend(lines)
    n_sphere = len(xyz)

    # Faces of the grain on the curved surface (|x| = R), for the contact slave surface.
    def on_sphere(i):
        p = xyz[i - 1]
        return abs((p ** 2).sum() ** 0.5 - R) < 1e-6 * R
    slave = faces_where(tets, on_sphere)

    # Three rigid plates, one C3D8 each, inner face (nodes 1-4, face S1) on the plane |x_axis| = R.
    node = n_sphere
    plates = []
    plate_xyz = {}
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        ids = []
        for depth in (0.0, 0.5 * R):
            for (a, b) in [(-0.2, -0.2), (-0.2, 1.2), (1.2, 1.2), (1.2, -0.2)]:
                p = [0.0, 0.0, 0.0]
                p[axis] = R + depth
                p[u], p[v] = a * R, b * R
                node += 1
                ids.append(node)
                plate_xyz[node] = p
                w(f"*NODE, NSET=PLATE{axis}\n{node}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}")
        plates.append(ids)
    for axis, ids in enumerate(plates):
        # Corners 1-4 (face S1) on the sphere's side, wound so that the element has a positive
        # volume: the right-hand normal of 1-2-3 then points into the plate, and S1's outward
        # normal at the sphere.
        inner, outer = ids[:4], ids[4:]
        e1 = [plate_xyz[inner[1]][d] - plate_xyz[inner[0]][d] for d in range(3)]
        e2 = [plate_xyz[inner[2]][d] - plate_xyz[inner[0]][d] for d in range(3)]
        normal = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]]
        if normal[axis] < 0:
            inner = [inner[0], inner[3], inner[2], inner[1]]
            outer = [outer[0], outer[3], outer[2], outer[1]]
        w(f"*ELEMENT, TYPE=C3D8, ELSET=WALL{axis}\n{len(tets) + axis + 1}, " + ", ".join(map(str, inner + outer)))
        w(f"*SURFACE, NAME=MASTER{axis}\nWALL{axis}, S1")

    def nset(name, ids):
        w(f"*NSET, NSET={name}")
        for k in range(0, len(ids), 12):
            w(", ".join(map(str, ids[k:k + 12])))

    for axis, label in enumerate("XYZ"):
        nset(f"SYM{label}", [i + 1 for i in range(n_sphere) if i + 1 in used and abs(xyz[i][axis]) < 1e-9])
        # The grain's node at the contact point on this axis (for eps = its displacement).
        pole = min((i for i in range(n_sphere) if i + 1 in used), key=lambda i: sum((xyz[i][d] - (R if d == axis else 0.0)) ** 2 for d in range(3)))
        nset(f"POLE{label}", [pole + 1])
    w("*SURFACE, NAME=SLAVE, TYPE=ELEMENT")
    for e, s in slave:
        w(f"{e}, S{s}")
    w(f"*MATERIAL, NAME=GRAIN\n*ELASTIC\n{E}, {NU}\n*DENSITY\n{RHO:e}")
    w(f"*MATERIAL, NAME=STIFF\n*ELASTIC\n{1e3 * E}, 0.3\n*DENSITY\n{RHO:e}")
    w("*SOLID SECTION, ELSET=GRAIN, MATERIAL=GRAIN")
    for axis in range(3):
        w(f"*SOLID SECTION, ELSET=WALL{axis}, MATERIAL=STIFF")
    for axis in range(3):
        w(f"*CONTACT PAIR, INTERACTION=SI, TYPE=SURFACE TO SURFACE\nSLAVE, MASTER{axis}")
    w(f"*SURFACE INTERACTION, NAME=SI\n*SURFACE BEHAVIOR, PRESSURE-OVERCLOSURE=LINEAR\n{PENALTY:.6e}")
    # Two steps of 10 fixed increments each: fine near contact onset (the Hertz range), coarser after.
    for target in (FIRST, DELTA):
        w("*STEP, NLGEOM, INC=1000\n*STATIC, DIRECT\n0.1, 1.0")
        w("*BOUNDARY\nSYMX, 1, 1, 0.\nSYMY, 2, 2, 0.\nSYMZ, 3, 3, 0.")
        for axis in range(3):
            w(f"PLATE{axis}, {axis + 1}, {axis + 1}, {-target}")
            for d in (d + 1 for d in range(3) if d != axis):
                w(f"PLATE{axis}, {d}, {d}, 0.")
        w("*NODE FILE\nU")
        for axis in range(3):
            w(f"*NODE PRINT, NSET=PLATE{axis}, TOTALS=ONLY\nRF")
        w("*EL PRINT, ELSET=GRAIN, TOTALS=ONLY\nELSE")
        w("*END STEP")
    open("sphere.inp", "w").write("\n".join(out) + "\n")
    print(f"sphere.inp: {n_sphere} grain nodes, {len(tets)} C3D10, {len(slave)} contact faces", file=sys.stderr)


def scalars():
    """sphere_scalars.csv from CalculiX's sphere.dat: per increment, the octant's strain energy and,
    for each wall, its displacement towards the centre (d) and the force it puts on the grain in
    that direction (minus its reaction along its axis): their product is the work done on the
    grain, and with eps tied to one of them (mode-extract --normalize boundary=x) eps = d > 0."""
    import re
    text = open("sphere.dat").read()
    times = [float(t) for t in re.findall(r"total internal energy for set GRAIN and time\s+(\S+)", text)]
    energy = [float(e) for e in re.findall(r"total internal energy for set GRAIN and time\s+\S+\s+(\S+)", text)]
    forces = {
        axis: [float(m[axis]) for m in re.findall(rf"total force \(fx,fy,fz\) for set PLATE{axis} and time\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)", text)]
        for axis in range(3)
    }
    rows = ["snapshot,strain_energy," + ",".join(f"force_{a},displacement_{a}" for a in "xyz")]
    for i, t in enumerate(times):
        # Total time: step 1 runs 0 -> 1 (walls 0 -> FIRST), step 2 runs 1 -> 2 (FIRST -> DELTA).
        d = FIRST * t if t <= 1.0 + 1e-12 else FIRST + (DELTA - FIRST) * (t - 1.0)
        cols = [f"{-forces[a][i]:.7e},{d:.7e}" for a in range(3)]
        rows.append(f"{i + 1},{energy[i]:.7e}," + ",".join(cols))
    open("sphere_scalars.csv", "w").write("\n".join(rows) + "\n")
    print(f"sphere_scalars.csv: {len(times)} increments", file=sys.stderr)


if __name__ == "__main__":
    scalars() if sys.argv[1:] == ["scalars"] else deck()
