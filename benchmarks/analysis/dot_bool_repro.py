import numpy as np, gpureduce, cupy as cp
rng=np.random.default_rng(3879565910)
a=rng.random(65537)<0.3; b=rng.random(65537)<0.3
print("seed case", gpureduce.dot(a,b), np.dot(a,b), (a&b).sum())
for n in (1000, 65537, 1<<20):
    for k in (256, 257, 512, 255):
        a=np.zeros(n,bool); b=np.zeros(n,bool); idx=np.random.default_rng(k).choice(n, k, replace=False); a[idx]=True; b[idx]=True
        print(n, k, "host", gpureduce.dot(a,b), "cupy", gpureduce.dot(cp.asarray(a),cp.asarray(b)), "vdot", gpureduce.vdot(a,b), "variant cub", gpureduce.dot(a,b,variant="cub") if True else "")
