# Generates the blocks*.msh and blocks.vtk fixtures with the Gmsh Python API (pip install gmsh);
# run: python3 make_blocks.py tests/data/meshes. Prints Gmsh's element-type node counts.
import gmsh, sys
gmsh.initialize()
gmsh.option.setNumber("General.Terminal", 0)
gmsh.model.add("blocks")
b1 = gmsh.model.occ.addBox(0, 0, 0, 1, 1, 1)
b2 = gmsh.model.occ.addBox(1, 0, 0, 1, 1, 1)
gmsh.model.occ.fragment([(3, b1)], [(3, b2)])
gmsh.model.occ.synchronize()
vols = [t for d, t in gmsh.model.getEntities(3)]
gmsh.model.addPhysicalGroup(3, [vols[0]], 5, "soft tissue")
gmsh.model.addPhysicalGroup(3, [vols[1]], 8, "lump")
# a surface group too, so readers must skip triangles
surf = gmsh.model.getBoundary([(3, vols[0])], oriented=False)[0][1]
gmsh.model.addPhysicalGroup(2, [abs(surf)], 11, "left")
gmsh.option.setNumber("Mesh.MeshSizeMax", 0.5)
gmsh.model.mesh.generate(3)
for name, ver, binary in [("blocks41.msh", 4.1, 0), ("blocks22.msh", 2.2, 0), ("blocks41_bin.msh", 4.1, 1)]:
    gmsh.option.setNumber("Mesh.MshFileVersion", ver)
    gmsh.option.setNumber("Mesh.Binary", binary)
    gmsh.write(sys.argv[1] + "/" + name)
gmsh.option.setNumber("Mesh.Binary", 0)
gmsh.write(sys.argv[1] + "/blocks.vtk")
types = {}
for t in list(range(1, 32)) + [92, 93]:
    try:
        types[t] = gmsh.model.mesh.getElementProperties(t)[3]
    except Exception as e:
        pass
print(types)
gmsh.finalize()
