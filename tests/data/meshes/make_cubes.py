# Run from the repository root: python3 tests/data/meshes/make_cubes.py
# Writes the same two-cube, two-region tetrahedral mesh in MSH 4.1, MSH 2.2, TetGen and VTK.
import itertools
nx,ny,nz=2,1,1
def nid(i,j,k): return i+(nx+1)*(j+(ny+1)*k)
nodes=[(0.5*i, 0.5*j, 0.5*k) for k in range(nz+1) for j in range(ny+1) for i in range(nx+1)]
def vol(t):
    a,b,c,d=[nodes[n] for n in t]
    u=[b[x]-a[x] for x in range(3)];v=[c[x]-a[x] for x in range(3)];w=[d[x]-a[x] for x in range(3)]
    return u[0]*(v[1]*w[2]-v[2]*w[1])-u[1]*(v[0]*w[2]-v[2]*w[0])+u[2]*(v[0]*w[1]-v[1]*w[0])
tets=[];regs=[]
for i in range(nx):
    for order in itertools.permutations(range(3)):
        c=[i,0,0];t=[nid(*c)]
        for ax in order:
            c[ax]+=1;t.append(nid(*c))
        if vol(t)<0: t[2],t[3]=t[3],t[2]
        tets.append(t);regs.append(1+i)
N=len(nodes);M=len(tets)
# a few boundary triangles on x=0 to be skipped by the readers
tris=[[nid(0,0,0),nid(0,1,0),nid(0,1,1)],[nid(0,0,0),nid(0,1,1),nid(0,0,1)]]
f=lambda x: repr(float(x))
with open('tests/data/meshes/cubes.msh','w') as o:
    o.write('$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n3\n2 9 "left face"\n3 1 "soft"\n3 2 "stiff"\n$EndPhysicalNames\n')
    o.write('$Entities\n0 0 1 2\n1 0 0 0 0 0.5 0.5 1 9 0\n1 0 0 0 0.5 0.5 0.5 1 1 1 1\n2 0.5 0 0 1 0.5 0.5 1 2 0\n$EndEntities\n')
    o.write('$Nodes\n1 %d 1 %d\n3 1 0 %d\n'%(N,N,N))
    for n in range(N): o.write('%d\n'%(n+1))
    for p in nodes: o.write('%s %s %s\n'%tuple(map(f,p)))
    o.write('$EndNodes\n$Elements\n3 %d 1 %d\n'%(M+2,M+2))
    o.write('2 1 2 2\n1 %d %d %d\n2 %d %d %d\n'%tuple(x+1 for x in tris[0]+tris[1]))
    for r in (1,2):
        blk=[(e,t) for e,t in enumerate(tets) if regs[e]==r]
        o.write('3 %d 4 %d\n'%(r,len(blk)))
        for e,t in blk: o.write('%d %d %d %d %d\n'%(e+3,*[x+1 for x in t]))
    o.write('$EndElements\n')
with open('tests/data/meshes/cubes22.msh','w') as o:
    o.write('$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n3 1 "soft"\n3 2 "stiff"\n$EndPhysicalNames\n$Nodes\n%d\n'%N)
    for n,p in enumerate(nodes): o.write('%d %s %s %s\n'%(n+1,*map(f,p)))
    o.write('$EndNodes\n$Elements\n%d\n'%(M+2))
    for e,t in enumerate(tris): o.write('%d 2 2 9 1 %d %d %d\n'%(e+1,*[x+1 for x in t]))
    for e,t in enumerate(tets): o.write('%d 4 2 %d %d %d %d %d %d\n'%(e+3,regs[e],regs[e],*[x+1 for x in t]))
    o.write('$EndElements\n')
with open('tests/data/meshes/cubes.node','w') as o:
    o.write('# two cubes, 0-based numbering\n%d 3 0 1\n'%N)
    for n,p in enumerate(nodes): o.write('%d %s %s %s 0\n'%(n,*map(f,p)))
with open('tests/data/meshes/cubes.ele','w') as o:
    o.write('%d 4 1\n'%M)
    for e,t in enumerate(tets): o.write('%d %d %d %d %d %d\n'%(e,*t,regs[e]))
with open('tests/data/meshes/cubes.vtk','w') as o:
    o.write('# vtk DataFile Version 3.0\ntwo cubes\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS %d float\n'%N)
    for p in nodes: o.write('%s %s %s\n'%tuple(map(f,p)))
    o.write('CELLS %d %d\n'%(M+2,5*M+8))
    for t in tris: o.write('3 %d %d %d\n'%tuple(t))
    for t in tets: o.write('4 %d %d %d %d\n'%tuple(t))
    o.write('CELL_TYPES %d\n'%(M+2)+'5\n5\n'+'10\n'*M)
    o.write('CELL_DATA %d\nSCALARS region int 1\nLOOKUP_TABLE default\n0\n0\n'%(M+2))
    for r in regs: o.write('%d\n'%r)
