import sympy as sp
th = sp.symbols('theta', positive=True)
x = sp.symbols('x')
A = sp.sin(th)/th
B = (1-sp.cos(th))/th**2
C = (th-sp.sin(th))/th**3
D = (1 - A/(2*B))/th**2
c2 = (th**2 + 2*sp.cos(th) - 2)/(2*th**4)
c3 = (2*th - 3*sp.sin(th) + th*sp.cos(th))/(2*th**5)
# ad-polynomial coefficients: p(x)=1+a1 x+a2 x^2+a3 x^3+a4 x^4 interpolating f(x)=(e^x-1)/x
# on min poly x (x^2+th^2)^2 -> conditions at x=0 and x=±i th (value + derivative)
a = sp.symbols('a1:5')
p = 1 + sum(a[i]*x**(i+1) for i in range(4))
f = (sp.exp(x)-1)/x
eqs = []
for r in (sp.I*th, -sp.I*th):
    eqs.append(sp.Eq(p.subs(x, r), f.subs(x, r)))
    eqs.append(sp.Eq(sp.diff(p, x).subs(x, r), sp.diff(f, x).subs(x, r)))
sol = sp.solve(eqs, a, dict=True)[0]
alphas = [sp.simplify(sp.expand_complex(sp.simplify(sol[ai].rewrite(sp.cos)))) for ai in a]
for i, al in enumerate(alphas):
    print("// alpha%d = %s" % (i+1, sp.simplify(al.rewrite(sp.sin))))
funcs = dict(A=A, B=B, C=C, D=D, Q2=c2, Q3=c3)
for i, al in enumerate(alphas): funcs['AL%d' % (i+1)] = al
derivs = {}
for k in ('B', 'C', 'AL1', 'AL2', 'AL3', 'AL4'):
    derivs['d' + k] = sp.diff(funcs[k], th)/th
funcs.update(derivs)
N = 16
out = []
for name, fn in funcs.items():
    s = sp.series(fn, th, 0, 2*N+2).removeO()
    cs = [s.coeff(th, 2*k) for k in range(N)]
    # check odd coefficients vanish
    assert all(s.coeff(th, 2*k+1) == 0 for k in range(N)), name
    out.append("inline constexpr double k%s[%d] = {%s};" % (name, N, ", ".join("%.17g" % float(c) for c in cs)))
print("\n".join(out))
