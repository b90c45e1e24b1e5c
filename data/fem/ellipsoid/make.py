"""Deck and post-processing of the ellipsoid FEM case: an octant of a linear elastic ellipsoid
(semi-axes 12, 9, 7 mm; symmetry planes x = 0, y = 0, z = 0) pressed along x by one rigid plate.
The second CalculiX case of the readers' tests, laid out as a user's own run would be: the plate
is a C3D8 element in the deck, `*NODE FILE` writes the grain's node set only, and the results are
also converted to VTK by ccx2paraview (whose files hold the plate too). Run by
`cargo xtask fem ellipsoid`:

    python3 make.py         # meshes with gmsh (C3D10) and writes ellipsoid.inp
    ccx -i ellipsoid        # CalculiX
    python3 make.py post    # ellipsoid_scalars.csv, vtk/ (ccx2paraview), rpt/ (Abaqus-style reports)

Units: mm, N, MPa. E = 1000, nu = 0.3.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gmsh_tets import faces_where, refine_and_mesh  # noqa: E402

AXES = (12.0, 9.0, 7.0)
E, NU, RHO = 1000.0, 0.3, 1.0e-9
DELTA = 0.9          # final plate displacement along -x (7.5 % of the x semi-axis)
INCREMENTS = 10
H_FAR, H_NEAR = 3.0, 0.35
PENALTY = 50.0 * E / H_NEAR  # linear pressure-overclosure slope
REPORTED = (3, 6, 10)        # increments written as Abaqus-style reports


def deck():
    """Meshes the octant and writes ellipsoid.inp."""
    import gmsh
    a, b, c = AXES
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.model.add("octant")
    ball = gmsh.model.occ.addSphere(0, 0, 0, 1.0)
    gmsh.model.occ.dilate([(3, ball)], 0, 0, 0, a, b, c)
    box = gmsh.model.occ.addBox(0, 0, 0, 2 * a, 2 * a, 2 * a)
    gmsh.model.occ.intersect([(3, ball)], [(3, box)])
    gmsh.model.occ.synchronize()
    pole = gmsh.model.occ.addPoint(a, 0, 0)
    gmsh.model.occ.synchronize()
    xyz, tets = refine_and_mesh(gmsh, [pole], H_NEAR, H_FAR, 1.0, 0.6 * a)
    gmsh.finalize()

    used = sorted({v for n in tets for v in n})  # gmsh also meshes the refinement point
    out = []
    w = out.append
    w("*HEADING\nEllipsoid octant pressed by a rigid plate (data/fem/ellipsoid/make.py)\n*NODE, NSET=NALL")
    for i in used:
        p = xyz[i - 1]
        w(f"{i}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}")
    w("*ELEMENT, TYPE=C3D10, ELSET=GRAIN")
    for e, n in enumerate(tets):
        w(f"{e + 1}, " + ", ".join(map(str, n)))

    def on_surface(i):
        p = xyz[i - 1]
        return abs(sum((p[d] / AXES[d]) ** 2 for d in range(3)) - 1.0) < 1e-6
    slave = faces_where(tets, on_surface)

    # The plate: one stiff C3D8 whose face S1 (nodes 1-4) lies on the plane x = a.
    first = max(used) + 1
    corners = [(-0.2 * b, -0.2 * c), (-0.2 * b, 1.2 * c), (1.2 * b, 1.2 * c), (1.2 * b, -0.2 * c)]
    plate = []
    for depth in (0.0, 0.4 * a):
        for (y, z) in corners:
            plate.append((first + len(plate), (a + depth, y, z)))
    w("*NODE, NSET=PLATE")
    for label, p in plate:
        w(f"{label}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}")
    ids = [label for label, _ in plate]
    # Inner corners wound so that the element's volume is positive (S1's normal faces the grain).
    inner, outer = ids[:4], ids[4:]
    inner, outer = [inner[0], inner[3], inner[2], inner[1]], [outer[0], outer[3], outer[2], outer[1]]
    w(f"*ELEMENT, TYPE=C3D8, ELSET=WALL\n{len(tets) + 1}, " + ", ".join(map(str, inner + outer)))
    w("*SURFACE, NAME=MASTER\nWALL, S1")

    def nset(name, labels):
        w(f"*NSET, NSET={name}")
        for k in range(0, len(labels), 12):
            w(", ".join(map(str, labels[k:k + 12])))

    nset("GRAINN", used)
    for axis, name in enumerate("XYZ"):
        nset(f"SYM{name}", [i for i in used if abs(xyz[i - 1][axis]) < 1e-9])
    tip = min(used, key=lambda i: (xyz[i - 1][0] - a) ** 2 + xyz[i - 1][1] ** 2 + xyz[i - 1][2] ** 2)
    nset("POLE", [tip])
    w("*SURFACE, NAME=SLAVE, TYPE=ELEMENT")
    for e, s in slave:
        w(f"{e}, S{s}")
    w(f"*MATERIAL, NAME=GRAIN\n*ELASTIC\n{E}, {NU}\n*DENSITY\n{RHO:e}")
    w(f"*MATERIAL, NAME=STIFF\n*ELASTIC\n{1e3 * E}, 0.3\n*DENSITY\n{RHO:e}")
    w("*SOLID SECTION, ELSET=GRAIN, MATERIAL=GRAIN\n*SOLID SECTION, ELSET=WALL, MATERIAL=STIFF")
    w("*CONTACT PAIR, INTERACTION=SI, TYPE=SURFACE TO SURFACE\nSLAVE, MASTER")
    w(f"*SURFACE INTERACTION, NAME=SI\n*SURFACE BEHAVIOR, PRESSURE-OVERCLOSURE=LINEAR\n{PENALTY:.6e}")
    w(f"*STEP, NLGEOM, INC=1000\n*STATIC, DIRECT\n{1.0 / INCREMENTS}, 1.0")
    w("*BOUNDARY\nSYMX, 1, 1, 0.\nSYMY, 2, 2, 0.\nSYMZ, 3, 3, 0.")
    w(f"PLATE, 1, 1, {-DELTA}\nPLATE, 2, 2, 0.\nPLATE, 3, 3, 0.")
    w("*NODE FILE, NSET=GRAINN\nU")
    w("*NODE PRINT, NSET=PLATE, TOTALS=ONLY\nRF")
    w("*EL PRINT, ELSET=GRAIN, TOTALS=ONLY\nELSE")
    w("*END STEP")
    open("ellipsoid.inp", "w").write("\n".join(out) + "\n")
    print(f"ellipsoid.inp: {len(used)} grain nodes, {len(tets)} C3D10, {len(slave)} contact faces", file=sys.stderr)


def scalars():
    """ellipsoid_scalars.csv from ellipsoid.dat: per increment the octant's strain energy, and the
    plate as the boundary `plate`: its displacement towards the grain (along -x) and the force
    it puts on the grain along that direction (minus the x reaction), whose product is the work
    done on the grain."""
    text = open("ellipsoid.dat").read()
    found = re.findall(r"total internal energy for set GRAIN and time\s+(\S+)\s+(\S+)", text)
    forces = re.findall(r"total force \(fx,fy,fz\) for set PLATE and time\s+\S+\s+(\S+)", text)
    rows = ["snapshot,strain_energy,force_plate,displacement_plate"]
    for i, ((t, energy), fx) in enumerate(zip(found, forces)):
        rows.append(f"{i + 1},{float(energy):.7e},{-float(fx):.7e},{DELTA * float(t):.7e}")
    open("ellipsoid_scalars.csv", "w").write("\n".join(rows) + "\n")


def reports():
    """rpt/increment-<k>.rpt: the displacements of some increments as Abaqus/Viewer writes a
    field output report of U at the nodes of a set (the frd's values; two blocks, long rows)."""
    os.makedirs("rpt", exist_ok=True)
    lines = open("ellipsoid.frd").read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("  100C") and lines[i + 1][5:13].strip() == "DISP":
            i += 2
            while lines[i].startswith(" -5"):
                i += 1
            rows = []
            while lines[i].startswith(" -1"):
                l = lines[i]
                rows.append((int(l[3:13]), float(l[13:25]), float(l[25:37]), float(l[37:49])))
                i += 1
            blocks.append(rows)
        i += 1
    for k in REPORTED:
        rows = blocks[k - 1]
        half = len(rows) // 2
        out = [f"********************************************************************************",
               f"Field Output Report, written from ellipsoid.frd increment {k} (data/fem/ellipsoid/make.py)",
               "", "Source 1", "---------", "", "   ODB: ellipsoid.odb", f"   Step: Step-1", f"   Frame: Increment {k:6d}", "",
               "Loc 1 : Nodal values from source 1", "", "Output sorted by column \"Node Label\".", "",
               "Field Output reported at nodes for part: PART-1-1", ""]
        for part in (rows[:half], rows[half:]):
            out += ["            Node           U.U1           U.U2           U.U3",
                    "           Label          @Loc 1         @Loc 1         @Loc 1",
                    "-----------------------------------------------------------------"]
            out += [f"{n:16d} {u1:14.6E} {u2:14.6E} {u3:14.6E}" for n, u1, u2, u3 in part]
            out += ["", ""]
        out += ["  Minimum          0.0            0.0            0.0", ""]
        open(f"rpt/increment-{k}.rpt", "w").write("\n".join(out) + "\n")


def vtk():
    """vtk/: ccx2paraview's conversion (one .vtu per increment, and a .pvd), as a user would make.
    ccx2paraview 3.2.0 mixes up increments: on a DISP block that covers a node set only it reads
    one row per node of the mesh and runs into the next block, and even on complete blocks it
    wrote increment 8 as the 7th file. So it converts here one increment at a time, from a run of
    the same deck with `*NODE FILE` for every node."""
    os.makedirs("vtk", exist_ok=True)
    text = open("ellipsoid.inp").read().replace("*NODE FILE, NSET=GRAINN", "*NODE FILE")
    open("whole.inp", "w").write(text)
    subprocess.run(["ccx", "-i", "whole"], check=True, stdout=subprocess.DEVNULL)
    lines = open("whole.frd").read().splitlines(keepends=True)
    starts = [i for i, l in enumerate(lines) if l.startswith("    1PSTEP")]
    end = next(i for i, l in enumerate(lines) if l.startswith(" 9999"))
    entries = []
    for k, start in enumerate(starts):
        stop = starts[k + 1] if k + 1 < len(starts) else end
        open("one.frd", "w").write("".join(lines[:starts[0]] + lines[start:stop] + lines[end:]))
        subprocess.run(["ccx2paraview", "one.frd", "vtu"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        name = f"ellipsoid.{k + 1:02d}.vtu"
        os.replace("one.vtu", os.path.join("vtk", name))
        entries.append(f'\t\t<DataSet file="{name}" timestep="{(k + 1) / INCREMENTS:g}"/>\n')
    open(os.path.join("vtk", "ellipsoid.pvd"), "w").write(
        '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        "\t<Collection>\n" + "".join(entries) + "\t</Collection>\n</VTKFile>\n")
    for f in glob.glob("whole.*") + ["one.frd", "spooles.out"]:
        if os.path.exists(f):
            os.remove(f)


if __name__ == "__main__":
    if sys.argv[1:] == ["post"]:
        scalars()
        reports()
        vtk()
    else:
        deck()
