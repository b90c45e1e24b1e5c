"""Shared by the cases' make.py: the refined second-order tetrahedral mesh of the current gmsh
model as Abaqus C3D10 connectivity."""


def refine_and_mesh(gmsh, points, size_near, size_far, dist_min, dist_max):
    """Meshes the current model (C3D10), with elements of size_near within dist_min of the
    points growing to size_far beyond dist_max. Returns (xyz, tets): node coordinates (row i is
    gmsh's node i + 1) and the tetrahedra as lists of 1-based node numbers in Abaqus order."""
    dist = gmsh.model.mesh.field.add("Distance")
    gmsh.model.mesh.field.setNumbers(dist, "PointsList", points)
    thr = gmsh.model.mesh.field.add("Threshold")
    gmsh.model.mesh.field.setNumber(thr, "InField", dist)
    gmsh.model.mesh.field.setNumber(thr, "SizeMin", size_near)
    gmsh.model.mesh.field.setNumber(thr, "SizeMax", size_far)
    gmsh.model.mesh.field.setNumber(thr, "DistMin", dist_min)
    gmsh.model.mesh.field.setNumber(thr, "DistMax", dist_max)
    gmsh.model.mesh.field.setAsBackgroundMesh(thr)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.model.mesh.generate(3)
    gmsh.model.mesh.setOrder(2)
    return c3d10(gmsh)


def c3d10(gmsh):
    """The current second-order tetrahedral mesh as (xyz, tets): node coordinates (row i is
    gmsh's node i + 1) and the tetrahedra as lists of 1-based node numbers in Abaqus order."""
    tags, coords, _ = gmsh.model.mesh.getNodes()
    index = {int(t): i + 1 for i, t in enumerate(tags)}
    xyz = [coords[3 * i:3 * i + 3] for i in range(len(coords) // 3)]  # with or without numpy
    etypes, _, enodes = gmsh.model.mesh.getElements(3)
    tets = []
    for t, nodes in zip(etypes, enodes):
        if t != 11:
            continue
        for k in range(0, len(nodes), 10):
            n = [index[int(v)] for v in nodes[k:k + 10]]
            n[8], n[9] = n[9], n[8]  # gmsh's last two mid-side nodes are Abaqus's 10 and 9
            tets.append(n)
    return xyz, tets


# The corners of a C3D10's faces S1..S4 (Abaqus), 0-based in its connectivity.
C3D10_FACES = ((0, 1, 2), (0, 1, 3), (1, 2, 3), (2, 0, 3))


def grain_lines(xyz, tets, elset):
    """Deck lines of the mesh: its nodes (those the tetrahedra use: gmsh also meshes the
    refinement points) and its C3D10 elements in element set `elset`. Returns (lines, used)."""
    used = {v for n in tets for v in n}
    lines = ["*NODE, NSET=NALL"]
    lines += [f"{i + 1}, {p[0]:.12f}, {p[1]:.12f}, {p[2]:.12f}" for i, p in enumerate(xyz) if i + 1 in used]
    lines.append(f"*ELEMENT, TYPE=C3D10, ELSET={elset}")
    lines += [f"{e + 1}, " + ", ".join(map(str, n)) for e, n in enumerate(tets)]
    return lines, used


def faces_where(tets, keep):
    """(element, face) pairs, both 1-based, of the tetrahedra's faces whose three corner nodes
    (1-based numbers) all satisfy `keep`."""
    return [(e + 1, s + 1) for e, n in enumerate(tets) for s, corners in enumerate(C3D10_FACES)
            if all(keep(n[c]) for c in corners)]
