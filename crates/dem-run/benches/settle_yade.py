# The scene of benches/settle.rs in YADE (2023.02a, LevelSet module): 216 level-set spheres of
# radius 1 with 402 surface nodes (grid spacing 0.1) in a 6 x 6 x 6 lattice of spacing 2.2,
# settling under gravity in a box of five walls; node springs kn = 5e6, ks = 2.5e6, friction
# 0.5, dt = 5e-4. Run by the bench as `yade -j1 -n -x settle_yade.py SETTLE TIMED`: it runs
# SETTLE steps untimed, then times TIMED steps and prints `YADE_STEPS_PER_SECOND <rate>`.
import sys
import time
from math import atan

settle, timed = int(sys.argv[1]), int(sys.argv[2])
O.materials.append(FrictMat(density=2650, frictionAngle=atan(0.5)))
for i in range(6):
	for j in range(6):
		for k in range(6):
			O.bodies.append(
			        levelSetBody(
			                'sphere',
			                center=(-5.5 + 2.2 * i, -5.5 + 2.2 * j, 1.2 + 2.2 * k),
			                radius=1,
			                spacing=0.1,
			                nSurfNodes=402,
			                nodesPath=1
			        )
			)
for position, axis in [((0, 0, 0), 2), ((-6.6, 0, 0), 0), ((6.6, 0, 0), 0), ((0, -6.6, 0), 1), ((0, 6.6, 0), 1)]:
	O.bodies.append(wall(position, axis=axis))
O.engines = [
        ForceResetter(),
        InsertionSortCollider([Bo1_LevelSet_Aabb(), Bo1_Wall_Aabb()], verletDist=0),
        InteractionLoop(
                [Ig2_LevelSet_LevelSet_ScGeom(), Ig2_Wall_LevelSet_ScGeom()],
                [Ip2_FrictMat_FrictMat_FrictPhys(kn=MatchMaker(algo='val', val=5e6), ks=MatchMaker(algo='val', val=2.5e6))],
                [Law2_ScGeom_FrictPhys_CundallStrack(sphericalBodies=False)]
        ),
        NewtonIntegrator(damping=0.0, gravity=(0, 0, -9.81))
]
O.dt = 5e-4
O.run(settle, True)
start = time.time()
O.run(timed, True)
print('YADE_STEPS_PER_SECOND', timed / (time.time() - start))
print('YADE_INTERACTIONS', len([i for i in O.interactions if i.isReal]))
