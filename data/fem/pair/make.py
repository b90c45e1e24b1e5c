"""Deck and post-processing of the pair FEM case: two different deformable grains pressed against
each other between two rigid plates. Grain A, a capsule (spherocylinder) standing along z, sits
on a fixed bottom plate; grain B, an ellipsoid, sits on A's top pole; a top plate pushes B down.
A quarter model (symmetry planes x = 0 and y = 0; both grains and both plates are symmetric about
them). Run by `cargo xtask fem pair`:

    python3 make.py         # meshes both grains with gmsh (C3D10) and writes pair.inp
    ccx -i pair             # CalculiX
    python3 make.py post    # pair_a_scalars.csv, pair_b_scalars.csv, pair_plates.csv

Units: mm, N, MPa.
- Grain A (element set GRAINA, node set GRAINAN): radius 5, cylindrical part 6 long (height 16),
  centred at (0, 0, -8): its poles are at z = -16 (on the bottom plate) and z = 0. E = 1000,
  nu = 0.3.
- Grain B (element set GRAINB, node set GRAINBN): semi-axes 8, 6, 5 along x, y, z, centred at
  (0, 0, 5): its poles are at z = 0 (on A's top pole) and z = 10 (under the top plate).
  E = 2000, nu = 0.25.
- The plates are stiff C3D8 elements (E = 1000 x A's), held in x and y; the bottom one (node set
  PLATEBOT) is fixed, the top one (PLATETOP) moves down by DELTA in 20 equal increments.
- Three frictionless surface-to-surface penalty contacts (linear pressure-overclosure, slope
  50 E / H_NEAR with the E of the softer side): bottom plate - A, A - B (A, the softer side, is
  the slave; both sides have the same element size there), B - top plate. Nothing else holds
  the grains along z: the contacts alone do (CalculiX needs no stabilising springs here).
- C3D10 from gmsh, each grain meshed on its own: elements of 0.35 within 1.7 of its two poles
  (the contact patches' radii reach 1.4 to 1.7), growing to 3.0 beyond 4.5.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gmsh_tets import C3D10_FACES, refine_and_mesh  # noqa: E402

RADIUS_A, CYLINDER_A, CENTRE_A = 5.0, 6.0, -8.0
AXES_B, CENTRE_B = (8.0, 6.0, 5.0), 5.0
E_A, NU_A = 1000.0, 0.3
E_B, NU_B = 2000.0, 0.25
RHO = 1.0e-9
DELTA = 1.2          # the top plate's final displacement along -z (the total closure)
INCREMENTS = 20
H_FAR, H_NEAR = 3.0, 0.35
DIST_MIN, DIST_MAX = 1.7, 4.5  # the refinement's reach around each contact point
PENALTY_A = 50.0 * E_A / H_NEAR  # bottom plate - A and A - B (A is the softer side)
PENALTY_B = 50.0 * E_B / H_NEAR  # B - top plate
BOTTOM = CENTRE_A - CYLINDER_A / 2.0 - RADIUS_A  # z of A's bottom pole, the bottom plate
TOP = CENTRE_B + AXES_B[2]                       # z of B's top pole, the top plate


def mesh_capsule():
    """Quarter capsule (x, y >= 0), refined at its two poles."""
    import gmsh
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("capsule")
    occ = gmsh.model.occ
    z0, z1 = CENTRE_A - CYLINDER_A / 2.0, CENTRE_A + CYLINDER_A / 2.0
    cyl = occ.addCylinder(0, 0, z0, 0, 0, CYLINDER_A, RADIUS_A)
    low = occ.addSphere(0, 0, z0, RADIUS_A)
    high = occ.addSphere(0, 0, z1, RADIUS_A)
    body, _ = occ.fuse([(3, cyl)], [(3, low), (3, high)])
    box = occ.addBox(0, 0, BOTTOM - 1.0, 2 * RADIUS_A, 2 * RADIUS_A, 2 * (RADIUS_A + CYLINDER_A) + 2.0)
    occ.intersect(body, [(3, box)])
    occ.synchronize()
    poles = [occ.addPoint(0, 0, BOTTOM), occ.addPoint(0, 0, 0.0)]
    occ.synchronize()
    xyz, tets = refine_and_mesh(gmsh, poles, H_NEAR, H_FAR, DIST_MIN, DIST_MAX)
    gmsh.finalize()
    return xyz, tets


def mesh_ellipsoid():
    """Quarter ellipsoid (x, y >= 0), refined at its two poles on the z axis."""
    import gmsh
    a, b, c = AXES_B
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("ellipsoid")
    occ = gmsh.model.occ
    ball = occ.addSphere(0, 0, 0, 1.0)
    occ.dilate([(3, ball)], 0, 0, 0, a, b, c)
    occ.translate([(3, ball)], 0, 0, CENTRE_B)
    box = occ.addBox(0, 0, CENTRE_B - 2 * c, 2 * a, 2 * a, 4 * c)
    occ.intersect([(3, ball)], [(3, box)])
    occ.synchronize()
    poles = [occ.addPoint(0, 0, CENTRE_B - c), occ.addPoint(0, 0, CENTRE_B + c)]
    occ.synchronize()
    xyz, tets = refine_and_mesh(gmsh, poles, H_NEAR, H_FAR, DIST_MIN, DIST_MAX)
    gmsh.finalize()
    return xyz, tets


def on_capsule(p):
    z = min(max(p[2], CENTRE_A - CYLINDER_A / 2.0), CENTRE_A + CYLINDER_A / 2.0)
    return abs((p[0] ** 2 + p[1] ** 2 + (p[2] - z) ** 2) ** 0.5 - RADIUS_A) < 1e-6 * RADIUS_A


def on_ellipsoid(p):
    a, b, c = AXES_B
    return abs((p[0] / a) ** 2 + (p[1] / b) ** 2 + ((p[2] - CENTRE_B) / c) ** 2 - 1.0) < 1e-6


def deck():
    """Meshes both grains and writes pair.inp."""
    grains = []  # per grain: its nodes' labels and coordinates, and its elements
    label, element = 0, 0
    coords = {}
    for xyz, tets in (mesh_capsule(), mesh_ellipsoid()):
        used = sorted({v for n in tets for v in n})  # gmsh also meshes the refinement points
        renumber = {}
        for i in used:
            label += 1
            renumber[i] = label
            coords[label] = tuple(float(v) for v in xyz[i - 1])
        elements = []
        for n in tets:
            element += 1
            elements.append((element, [renumber[v] for v in n]))
        grains.append(([renumber[i] for i in used], elements))
    (nodes_a, elems_a), (nodes_b, elems_b) = grains

    out = []
    w = out.append
    w("*HEADING\nTwo grains (a capsule and an ellipsoid) pressed together between two rigid plates, "
      "quarter model (data/fem/pair/make.py)")

    def write_nodes(name, labels):
        w(f"*NODE, NSET={name}")
        for i in labels:
            p = coords[i]
            w(f"{i}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}")

    def write_elements(name, elements):
        w(f"*ELEMENT, TYPE=C3D10, ELSET={name}")
        for e, n in elements:
            w(f"{e}, " + ", ".join(map(str, n)))

    def nset(name, labels):
        w(f"*NSET, NSET={name}")
        for k in range(0, len(labels), 12):
            w(", ".join(map(str, labels[k:k + 12])))

    write_nodes("GRAINAN", nodes_a)
    write_nodes("GRAINBN", nodes_b)
    write_elements("GRAINA", elems_a)
    write_elements("GRAINB", elems_b)

    # Element faces on each grain's curved surface, split at its equator: the lower half meets
    # the plate or grain below, the upper half the one above.
    def surface(elements, on, split):
        lower, upper = [], []
        for e, n in elements:
            for s, cs in enumerate(C3D10_FACES):
                if all(on(coords[n[k]]) for k in cs):
                    z = sum(coords[n[k]][2] for k in cs) / 3.0
                    (lower if z < split else upper).append((e, s + 1))
        return lower, upper

    a_low, a_high = surface(elems_a, on_capsule, CENTRE_A)
    b_low, b_high = surface(elems_b, on_ellipsoid, CENTRE_B)

    # The plates: one stiff C3D8 each, its face S1 (nodes 1-4) on the plane it touches the grain
    # at, the element on the far side.
    def plate(name, z, away, half_x, half_y):
        nonlocal label, element
        corners = [(-0.2 * half_x, -0.2 * half_y), (1.2 * half_x, -0.2 * half_y),
                   (1.2 * half_x, 1.2 * half_y), (-0.2 * half_x, 1.2 * half_y)]
        ids = []
        w(f"*NODE, NSET=PLATE{name}")
        for depth in (0.0, 3.0 * away):
            for (x, y) in corners:
                label += 1
                ids.append(label)
                w(f"{label}, {x:.12f}, {y:.12f}, {z + depth:.12f}")
        inner, outer = ids[:4], ids[4:]
        # Corners 1-2-3 counter-clockwise seen from the far side: a positive volume, and S1's
        # outward normal towards the grain.
        if away < 0:
            inner, outer = [inner[0], inner[3], inner[2], inner[1]], [outer[0], outer[3], outer[2], outer[1]]
        element += 1
        w(f"*ELEMENT, TYPE=C3D8, ELSET=WALL{name}\n{element}, " + ", ".join(map(str, inner + outer)))
        w(f"*SURFACE, NAME=S{name}\nWALL{name}, S1")

    plate("BOT", BOTTOM, -1.0, RADIUS_A, RADIUS_A)
    plate("TOP", TOP, 1.0, AXES_B[0], AXES_B[1])

    nset("GRAINN", nodes_a + nodes_b)
    grain_nodes = nodes_a + nodes_b
    nset("SYMX", [i for i in grain_nodes if abs(coords[i][0]) < 1e-9])
    nset("SYMY", [i for i in grain_nodes if abs(coords[i][1]) < 1e-9])

    def closest(labels, z):
        return [min(labels, key=lambda i: coords[i][0] ** 2 + coords[i][1] ** 2 + (coords[i][2] - z) ** 2)]

    nset("APOLEBOT", closest(nodes_a, BOTTOM))
    nset("APOLETOP", closest(nodes_a, 0.0))
    nset("BPOLEBOT", closest(nodes_b, CENTRE_B - AXES_B[2]))
    nset("BPOLETOP", closest(nodes_b, TOP))
    for name, faces_ in (("ALOW", a_low), ("AHIGH", a_high), ("BLOW", b_low), ("BHIGH", b_high)):
        w(f"*SURFACE, NAME={name}, TYPE=ELEMENT")
        for e, s in faces_:
            w(f"{e}, S{s}")
    w(f"*MATERIAL, NAME=MATA\n*ELASTIC\n{E_A}, {NU_A}\n*DENSITY\n{RHO:e}")
    w(f"*MATERIAL, NAME=MATB\n*ELASTIC\n{E_B}, {NU_B}\n*DENSITY\n{RHO:e}")
    w(f"*MATERIAL, NAME=STIFF\n*ELASTIC\n{1e3 * E_A}, 0.3\n*DENSITY\n{RHO:e}")
    w("*SOLID SECTION, ELSET=GRAINA, MATERIAL=MATA\n*SOLID SECTION, ELSET=GRAINB, MATERIAL=MATB")
    w("*SOLID SECTION, ELSET=WALLBOT, MATERIAL=STIFF\n*SOLID SECTION, ELSET=WALLTOP, MATERIAL=STIFF")
    # Slave surface first, master second.
    w("*CONTACT PAIR, INTERACTION=SIA, TYPE=SURFACE TO SURFACE\nALOW, SBOT")
    w("*CONTACT PAIR, INTERACTION=SIA, TYPE=SURFACE TO SURFACE\nAHIGH, BLOW")
    w("*CONTACT PAIR, INTERACTION=SIB, TYPE=SURFACE TO SURFACE\nBHIGH, STOP")
    w(f"*SURFACE INTERACTION, NAME=SIA\n*SURFACE BEHAVIOR, PRESSURE-OVERCLOSURE=LINEAR\n{PENALTY_A:.6e}")
    w(f"*SURFACE INTERACTION, NAME=SIB\n*SURFACE BEHAVIOR, PRESSURE-OVERCLOSURE=LINEAR\n{PENALTY_B:.6e}")
    w(f"*STEP, NLGEOM, INC=1000\n*STATIC, DIRECT\n{1.0 / INCREMENTS}, 1.0")
    w("*BOUNDARY\nSYMX, 1, 1, 0.\nSYMY, 2, 2, 0.")
    w("PLATEBOT, 1, 3, 0.")
    w(f"PLATETOP, 1, 2, 0.\nPLATETOP, 3, 3, {-DELTA}")
    w("*NODE FILE, NSET=GRAINN\nU")
    w("*NODE PRINT, NSET=PLATETOP, TOTALS=ONLY\nRF")
    w("*NODE PRINT, NSET=PLATEBOT, TOTALS=ONLY\nRF")
    w("*EL PRINT, ELSET=GRAINA, TOTALS=ONLY\nELSE")
    w("*EL PRINT, ELSET=GRAINB, TOTALS=ONLY\nELSE")
    w("*END STEP")
    open("pair.inp", "w").write("\n".join(out) + "\n")
    print(f"pair.inp: grain A {len(nodes_a)} nodes, {len(elems_a)} C3D10; grain B {len(nodes_b)} nodes, "
          f"{len(elems_b)} C3D10; contact faces {len(a_low)}, {len(a_high)}, {len(b_low)}, {len(b_high)}",
          file=sys.stderr)


def post():
    """The tables from pair.dat: per grain its strain energy per increment (pair_a_scalars.csv,
    pair_b_scalars.csv), and per increment the closure (the top plate's displacement along -z)
    and the force each plate puts on the grains along the loading direction, positive in
    compression (pair_plates.csv). All values are the quarter model's."""
    text = open("pair.dat").read()

    def energies(name):
        return re.findall(rf"total internal energy for set {name} and time\s+(\S+)\s+(\S+)", text)

    def forces(name):
        return re.findall(rf"total force \(fx,fy,fz\) for set {name} and time\s+(\S+)\s+\S+\s+\S+\s+(\S+)", text)

    for grain, name in (("a", "GRAINA"), ("b", "GRAINB")):
        rows = ["snapshot,strain_energy"]
        rows += [f"{k + 1},{float(e):.7e}" for k, (_, e) in enumerate(energies(name))]
        open(f"pair_{grain}_scalars.csv", "w").write("\n".join(rows) + "\n")
    top, bottom = forces("PLATETOP"), forces("PLATEBOT")
    rows = ["increment,closure,force_top,force_bottom"]
    for k, ((t, fz_top), (_, fz_bottom)) in enumerate(zip(top, bottom)):
        # The top plate pushes along -z, the bottom one along +z; a reaction is the force the
        # plate puts on the grains.
        rows.append(f"{k + 1},{DELTA * float(t):.7e},{-float(fz_top):.7e},{float(fz_bottom):.7e}")
    open("pair_plates.csv", "w").write("\n".join(rows) + "\n")
    print(f"pair_plates.csv: {len(rows) - 1} increments", file=sys.stderr)


if __name__ == "__main__":
    post() if sys.argv[1:] == ["post"] else deck()
