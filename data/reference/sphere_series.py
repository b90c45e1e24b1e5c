#!/usr/bin/env python3
"""Series (Legendre) reference solution: isotropic elastic solid sphere squeezed by two
opposite "cap loads" F along z (traction parallel to -/+e_z, q(d) = C sqrt(1-d^2/rho^2)).

Source / method.  Lame's solution of the sphere with given surface tractions in terms of
solid spherical harmonics, in the form used by Love, "A Treatise on the Mathematical Theory
of Elasticity", 4th ed. (1927), ch. XI, sec. 169 (displacements built from a harmonic of
degree n: u = grad phi_n and u = r^2 grad w_n + alpha_n x w_n) and secs. 170-171 (surface
tractions expanded in surface harmonics, coefficients matched degree by degree).  The
axisymmetric specialisation, the coefficient alpha_n and the traction expressions below
were re-derived here (not copied from the book's printed equations) and are verified
numerically by this script: Navier residual (FD), traction BC (FD), n = 0 pressure check.

Per even degree n >= 2, with w = r^n P_n(cos th), P = P_n(cos th), Q = dP_n/dth,
lam = 2 mu nu/(1-2nu):
  family A: u = grad(r^n P):  u_r = n r^(n-1) P,  u_th = r^(n-1) Q,
            s_rr = 2mu n(n-1) r^(n-2) P,  s_rth = 2mu (n-1) r^(n-2) Q
  family B: u = r^2 grad w + alpha_n x w,  alpha_n = -2[n lam+(3n+1)mu]/[(n+3)lam+(n+5)mu]
            u_r = (n+alpha_n) r^(n+1) P,  u_th = r^(n+1) Q,  div u = (2n+alpha_n(n+3)) r^n P
            s_rr = [lam(2n+alpha_n(n+3)) + 2mu(n+1)(n+alpha_n)] r^n P,
            s_rth = mu (2n+alpha_n) r^n Q
  n = 0: u_r = a_0 r/(3K)  (uniform pressure).  Odd n vanish (load symmetric about z=0).
Surface traction: t_r = sum a_n P_n(c), t_th = sum b_n dP_n/dth, with
  a_n = (2n+1)/2 int_{-1}^{1} t_r P_n dc,  b_n = (2n+1)/(2n(n+1)) int_{-1}^{1} t_th dP_n/dth dc.
North cap: t = -q e_z  ->  t_r = -q cos th, t_th = +q sin th;  south cap is the mirror image.
Chord d = 2R sin(th/2) gives dA = 2 pi d dd, so C = 3F/(2 pi rho^2).
"""
import time
import numpy as np
from scipy.special import roots_jacobi

T0 = time.time()
R, E, NU, F = 10.0, 1000.0, 0.25, 1.0
MU = E / (2 * (1 + NU)); LAM = 2 * MU * NU / (1 - 2 * NU); K = E / (3 * (1 - 2 * NU))
SCALE = E * R / F


def harmonic_coeffs(a, b):
    """Given traction coefficients a_n, b_n (n=0..N), return A'_n, B'_n (A'=A R^(n-2), B'=B R^n)
    and alpha_n; n=0 handled separately (returned in A'[0] as u_r/r = a_0/(3K))."""
    N = len(a) - 1
    n = np.arange(N + 1, dtype=float)
    al = -2 * (n * LAM + (3 * n + 1) * MU) / ((n + 3) * LAM + (n + 5) * MU)
    A = np.zeros(N + 1); B = np.zeros(N + 1)
    m = n >= 2
    m11 = 2 * MU * n * (n - 1); m12 = LAM * (2 * n + al * (n + 3)) + 2 * MU * (n + 1) * (n + al)
    m21 = 2 * MU * (n - 1);     m22 = MU * (2 * n + al)
    det = np.where(m, m11 * m22 - m12 * m21, 1.0)
    A[m] = ((a * m22 - m12 * b) / det)[m]
    B[m] = ((m11 * b - m21 * a) / det)[m]
    A[0] = a[0] / (3 * K)
    return A, B, al


def field(A, B, al, s, th):
    """u_r, u_th at radius r = s R (s may be array), angle th (array); even n only."""
    c, sn = np.cos(th), np.sin(th)
    s = np.broadcast_to(np.asarray(s, float), c.shape)
    ur = A[0] * R * s * np.ones_like(c); ut = np.zeros_like(c)
    P0, P1 = np.ones_like(c), c.copy(); Q0, Q1 = np.zeros_like(c), -sn
    N = len(A) - 1
    for n in range(1, N):
        P2 = ((2 * n + 1) * c * P1 - n * P0) / (n + 1)
        Q2 = ((2 * n + 1) * c * Q1 - (n + 1) * Q0) / n
        P0, P1, Q0, Q1 = P1, P2, Q1, Q2
        k = n + 1
        if k % 2 == 0:
            sa, sb = s ** (k - 1), s ** (k + 1)
            ur += R * (A[k] * k * sa + B[k] * (k + al[k]) * sb) * P1
            ut += R * (A[k] * sa + B[k] * sb) * Q1
    return ur, ut


def cap_traction_coeffs(rho, N, pointload=False):
    """a_n, b_n (n = 0..N) of the two-cap load; exact Gauss-Jacobi quadrature (weight sqrt)."""
    a = np.zeros(N + 1); b = np.zeros(N + 1); n = np.arange(N + 1)
    if pointload:                      # F delta at both poles, normal
        a[::2] = -(2 * n[::2] + 1) * F / (2 * np.pi * R**2)
        return a, b, 1.0
    C = 3 * F / (2 * np.pi * rho**2); h = rho**2 / (2 * R**2); c0 = 1 - h
    x, w = roots_jacobi(N // 2 + 20, 0.0, 0.5)      # weight (1+x)^0.5 on [-1,1]
    c = c0 + h * (1 + x) / 2; sn = np.sqrt(1 - c * c)
    wq = w * C * (h / 2) / np.sqrt(2)                # int_{c0}^1 q g dc = sum wq g(c_i)
    force = 2 * np.pi * R**2 * wq.sum()              # total cap force check (should be F)
    P0, P1, Q0, Q1 = np.ones_like(c), c.copy(), np.zeros_like(c), -sn
    a[0] = -np.sum(wq * c)                           # (1/2)*2 caps*int t_r dc
    for k in range(1, N):
        P0, P1, Q0, Q1 = P1, ((2*k+1)*c*P1 - k*P0)/(k+1), Q1, ((2*k+1)*c*Q1 - (k+1)*Q0)/k
        m = k + 1
        if m % 2 == 0:   # both caps contribute equally for even n
            a[m] = -(2 * m + 1) * np.sum(wq * c * P1)
            b[m] = (2 * m + 1) / (m * (m + 1)) * np.sum(wq * sn * Q1)
    return a, b, force / F


def solve(rho, N, pointload=False):
    a, b, fchk = cap_traction_coeffs(rho, N, pointload)
    A, B, al = harmonic_coeffs(a, b)
    return dict(a=a, b=b, A=A, B=B, al=al, fchk=fchk)


def surf(sol, th):
    return field(sol['A'], sol['B'], sol['al'], 1.0, np.atleast_1d(np.asarray(th, float)))


def prescribed(rho, th):
    C = 3 * F / (2 * np.pi * rho**2); th = np.asarray(th, float)
    dn, ds = 2 * R * np.sin(th / 2), 2 * R * np.cos(th / 2)
    qn = C * np.sqrt(np.clip(1 - dn**2 / rho**2, 0, None))
    qs = C * np.sqrt(np.clip(1 - ds**2 / rho**2, 0, None))
    return (qs - qn) * np.cos(th), (qn - qs) * np.sin(th)   # north -q e_z, south +q e_z


def fd_stress(sol, th, eps=1e-5):
    """s_rr, s_rth at r=R by 4th-order central differences of the series field."""
    f = lambda s, t: field(sol['A'], sol['B'], sol['al'], s, np.atleast_1d(t))
    d = lambda g: (-g(2) + 8 * g(1) - 8 * g(-1) + g(-2)) / 12
    ur, ut = f(1.0, th)
    dr = [f(1 + k * eps, th) for k in (-2, -1, 1, 2)]
    dt = [f(1.0, th + k * eps) for k in (-2, -1, 1, 2)]
    pick = lambda L, i: (lambda k: L[{-2: 0, -1: 1, 1: 2, 2: 3}[k]][i])
    urr, utr = d(pick(dr, 0)) / (eps * R), d(pick(dr, 1)) / (eps * R)
    urt, utt = d(pick(dt, 0)) / eps, d(pick(dt, 1)) / eps
    srr = (LAM + 2 * MU) * urr + LAM * (2 * ur + utt + ut / np.tan(th)) / R
    srt = MU * (utr - ut / R + urt / R)
    return srr, srt


def u_cart(sol, X):
    r = np.linalg.norm(X); th = np.arccos(X[2] / r); ph = np.arctan2(X[1], X[0])
    ur, ut = field(sol['A'], sol['B'], sol['al'], r / R, np.array([th]))
    er = X / r; et = np.array([np.cos(th) * np.cos(ph), np.cos(th) * np.sin(ph), -np.sin(th)])
    return ur[0] * er + ut[0] * et


def navier_residual(sol, X, h=1e-2):
    I = np.eye(3); g = lambda Y: u_cart(sol, Y)
    H = np.zeros((3, 3, 3))   # H[i,j,k] = d2 u_i / dx_j dx_k
    for j in range(3):
        for k in range(3):
            H[:, j, k] = (g(X + h*I[j] + h*I[k]) - g(X + h*I[j] - h*I[k])
                          - g(X - h*I[j] + h*I[k]) + g(X - h*I[j] - h*I[k])) / (4 * h * h)
    lap = np.einsum('ijj->i', H); graddiv = np.einsum('jji->i', H)
    res = MU * lap + (LAM + MU) * graddiv
    return np.linalg.norm(res) / (MU * np.linalg.norm(lap) + (LAM + MU) * np.linalg.norm(graddiv))


def patch_avg(sol, rho, p_hat, Ms, Mp):
    """Weighted average of u.(-n_p) over {x on sphere: |x-p|<rho}, weight sqrt(1-d^2/rho^2).
    Coordinates around p: s = d^2 in [0, rho^2] (dA = ds/2 dpsi), Gauss-Jacobi in s (exact
    weight), trapezoid (spectral) in psi."""
    x, w = roots_jacobi(Ms, 0.5, 0.0)              # weight (1-x)^0.5
    s = rho**2 * (1 + x) / 2; ws = w * (rho**2 / 2) / np.sqrt(2)
    psi = 2 * np.pi * np.arange(Mp) / Mp; wp = 2 * np.pi / Mp
    t1 = np.cross([0.0, 1.0, 0.0], p_hat); t1 /= np.linalg.norm(t1); t2 = np.cross(p_hat, t1)
    cb = 1 - s / (2 * R**2); sb = np.sqrt(1 - cb**2)
    S, PS = np.meshgrid(np.arange(Ms), psi, indexing='ij')
    X = R * (cb[S][..., None] * p_hat + sb[S][..., None] * (np.cos(PS)[..., None] * t1
                                                             + np.sin(PS)[..., None] * t2))
    X = X.reshape(-1, 3); W = (ws[S] * wp / 2).ravel()
    th = np.arccos(np.clip(X[:, 2] / R, -1, 1)); ph = np.arctan2(X[:, 1], X[:, 0])
    ur, ut = field(sol['A'], sol['B'], sol['al'], 1.0, th)
    er = X / R; et = np.stack([np.cos(th) * np.cos(ph), np.cos(th) * np.sin(ph), -np.sin(th)], 1)
    u = ur[:, None] * er + ut[:, None] * et
    val = -(u @ p_hat)
    return np.sum(W * val) / np.sum(W), np.sum(W) / (2 * np.pi * rho**2 / 3)


def euler_sum(terms, levels=12):
    S = np.cumsum(terms)[-(levels + 1):]
    for _ in range(levels):
        S = 0.5 * (S[1:] + S[:-1])
    return S[-1]


if __name__ == "__main__":
    np.set_printoptions(linewidth=150)
    print(f"R={R} E={E} nu={NU} F={F}  mu={MU:.6g} lam={LAM:.6g}  E*R/F={SCALE}")
    # ---------- (a) uniform external pressure p: a_0 = -p, only n = 0
    p = 1.0; N = 10
    A, B, al = harmonic_coeffs(np.r_[-p, np.zeros(N)], np.zeros(N + 1))
    ur, _ = field(A, B, al, 1.0, np.array([0.3, 1.2]))
    print(f"\n(a) pressure p=1: u_r(R) = {ur[0]:.12g}, exact -pR(1-2nu)/E = {-p*R*(1-2*NU)/E:.12g}")
    # ---------- (b) Navier equations + traction boundary condition
    rho = 4.0; solc = solve(rho, 60)
    for X in (np.array([3.0, 1.0, 5.0]), np.array([5.0, -2.0, -4.0])):
        print(f"(b0) Navier residual |mu lap u+(lam+mu) grad div u| / scale at {X}: "
              f"{navier_residual(solc, X):.2e}  (N=60, FD h=1e-2)")
    ths = np.array([0.1, 0.3, 0.40, 0.5, np.pi / 4, 1.2, np.pi / 2 - 0.01, np.pi - 0.2])
    tr, tt = prescribed(rho, ths)
    print(f"(b) rho={rho}: cap half-angle {2*np.arcsin(rho/2/R):.4f} rad; stresses at r=R, "
          "FD (4th order, eps=1e-5) of truncated series vs truncated traction series vs prescribed")
    for Nb in (200, 800):
        sol = solve(rho, Nb); srr, srt = fd_stress(sol, ths)
        Pa = np.polynomial.legendre.legval(np.cos(ths), sol['a'])   # sum a_n P_n
        # series of t_th: sum b_n dP_n/dth via field-like recurrence
        c, sn = np.cos(ths), np.sin(ths); Q0, Q1 = 0 * c, -sn; Tb = np.zeros_like(c)
        for k in range(1, Nb):
            Q0, Q1 = Q1, ((2*k+1)*c*Q1 - (k+1)*Q0)/k; Tb += sol['b'][k+1] * Q1
        print(f"  N={Nb}: total-force check (quadrature) = {sol['fchk']:.15f}")
        print("   theta     s_rr(FD)      sum a_nP_n    t_r(exact)  |  s_rth(FD)     sum b_nQ_n    t_th(exact)")
        for i, t in enumerate(ths):
            print(f"  {t:7.4f} {srr[i]: .6e} {Pa[i]: .6e} {tr[i]: .6e} | {srt[i]: .6e} {Tb[i]: .6e} {tt[i]: .6e}")
        print(f"   max|FD - series| = {max(np.abs(srr-Pa).max(), np.abs(srt-Tb).max()):.2e}, "
              f"max|series - exact| = {max(np.abs(Pa-tr).max(), np.abs(Tb-tt).max()):.2e}"
              f"  (peak traction {3*F/(2*np.pi*rho**2):.4e})")
    # ---------- 1. surface displacements
    th_out = np.array([0.0, np.pi / 4, np.pi / 2])
    print("\n1. Surface displacement (value, and value*E*R/F)")
    for rho in (3.0, 3.8, 4.0):
        for N in (2000, 4000, 8000):
            sol = solve(rho, N); ur, ut = surf(sol, th_out)
            print(f"  rho={rho} N={N:5d}: u_r(0)={ur[0]:.8e} [{ur[0]*SCALE:.7f}]  u_r(pi/4)={ur[1]:.8e} "
                  f"[{ur[1]*SCALE:.7f}]  u_r(pi/2)={ur[2]:.8e} [{ur[2]*SCALE:.7f}]  2u_r(pi/2)="
                  f"{2*ur[2]:.8e} [{2*ur[2]*SCALE:.7f}]  u_th(pi/4)*ER/F={ut[1]*SCALE:.7f}")
        print(f"    (plausibility only: Hertz half-space centre deflection 3(1-nu^2)R/(4 rho) = "
              f"{3*(1-NU**2)*R/(4*rho):.5f}; u_r(0)*ER/F + Hertz = {ur[0]*SCALE + 3*(1-NU**2)*R/(4*rho):.5f})")
    # ---------- (c) small-rho trend and point-load limit at the equator
    print("\n(c) equator u_r*E*R/F as rho -> 0")
    for rho in (4.0, 2.0, 1.0, 0.5, 0.25):
        v = [surf(solve(rho, N), np.pi / 2)[0][0] * SCALE for N in (4000, 8000)]
        print(f"  rho={rho:5.2f}: N=4000 {v[0]:.7f}  N=8000 {v[1]:.7f}")
    for N in (4000, 8000):
        sol = solve(0, N, pointload=True); n = np.arange(N + 1)
        Pn0 = np.zeros(N + 1); Pn0[0] = 1.0
        for k in range(0, N - 1):
            Pn0[k + 2] = -(k + 1) / (k + 2) * Pn0[k]
        U = R * (sol['A'] * n + sol['B'] * (n + sol['al'])); U[0] = R * sol['A'][0]
        terms = (U * Pn0)[::2]
        print(f"  point load (rho=0), Euler-averaged series N={N}: u_r(pi/2)*E*R/F = "
              f"{euler_sum(terms)*SCALE:.7f}  (raw partial sum {terms.sum()*SCALE:.5f})")
    # ---------- 2. patch-weighted inward displacement
    print("\n2. Patch-weighted inward displacement * E*R/F  (Ms x Mpsi quadrature, N terms)")
    probes = {"equator (R,0,0)": np.array([1.0, 0, 0]),
              "45deg (R/sqrt2,0,R/sqrt2)": np.array([1.0, 0, 1.0]) / np.sqrt(2)}
    for rho in (3.0, 3.8, 4.0):
        sols = {N: solve(rho, N) for N in (1500, 3000)}
        for name, ph in probes.items():
            for (Ms, Mp, N) in ((24, 48, 1500), (48, 96, 1500), (96, 192, 1500), (96, 192, 3000)):
                v, wchk = patch_avg(sols[N], rho, ph, Ms, Mp)
                print(f"  rho={rho} {name:26s} Ms={Ms:3d} Mpsi={Mp:3d} N={N}: {v*SCALE:.7f}"
                      f"   (weight-integral/exact = {wchk:.12f})")
    # ---------- 3. the body's compliance beyond the half space, at the loaded pole
    print("\n3. Pole: patch-weighted inward displacement, the half space's 3(1-nu^2)/(5 rho E) for the"
          " same weights, and the remainder, * E*R/F")
    for rho in (1.0, 2.0, 3.0, 4.0, 5.0):
        v, _ = patch_avg(solve(rho, 3000), rho, np.array([0.0, 0.0, 1.0]), 64, 128)
        half = 3 * (1 - NU**2) / (5 * rho * E)
        print(f"  rho={rho}: {v*SCALE:.5f} - {half*SCALE:.5f} = {(v-half)*SCALE:+.5f}")
    print(f"\nruntime {time.time()-T0:.1f} s")
