"""Mesh of a whole elastic ball for the free-mode checks (mode_extract::free): radius 10 mm,
C3D10 of uniform size from gmsh, written as an Abaqus/CalculiX input deck (nodes, elements, the
material) so that the readers take it as a user's mesh. Run `python3 make.py [size]` (needs
`pip install gmsh`); the committed ball.inp is size 3.

Units: mm, N, MPa, t/mm^3. E = 1000 MPa, nu = 0.25 (a Poisson solid), rho = 1e-9.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gmsh_tets import c3d10, grain_lines  # noqa: E402
import gmsh

R = 10.0
E, NU, RHO = 1000.0, 0.25, 1.0e-9


def mesh(size):
    """Nodes (row i is node i + 1) and C3D10 tetrahedra (1-based, Abaqus order)."""
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.option.setNumber("Mesh.RandomSeed", 1)
    gmsh.model.add("ball")
    gmsh.model.occ.addSphere(0, 0, 0, R)
    gmsh.model.occ.synchronize()
    gmsh.option.setNumber("Mesh.MeshSizeMin", size)
    gmsh.option.setNumber("Mesh.MeshSizeMax", size)
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    xyz, tets = c3d10(gmsh)
    gmsh.finalize()
    return xyz, tets


def main():
    size = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    xyz, tets = mesh(size)
    lines, used = grain_lines(xyz, tets, "BALL")
    out = [f"*HEADING\nWhole ball, radius {R} mm, C3D10 of size {size} (data/fem/ball/make.py)"] + lines
    out += ["*MATERIAL, NAME=SOLID", "*ELASTIC", f"{E}, {NU}", "*DENSITY", f"{RHO}",
            "*SOLID SECTION, ELSET=BALL, MATERIAL=SOLID"]
    name = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ball.inp")
    with open(name, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"{name}: {len(used)} nodes, {len(tets)} C3D10")


if __name__ == "__main__":
    main()
