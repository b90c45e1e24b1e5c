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
