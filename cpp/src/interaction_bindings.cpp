// hri_interaction C++ kernels (submodule hri_core._hri_core.interaction), owner: hri_interaction.
//
// The 1 kHz hot path of Chang 2026 ch. 12 / app. H, twist order (w, v), body frame:
//   Lie-PD impedance   tau = J_b^T (-K e - D edot) + bias,  e = Log(T_ref^-1 T),
//                      edot = V_b - Ad_{T^-1 T_ref} V_ref
//   Lie admittance     M_l = J^T M J, D_l = J^T (D J + M Jdot), gamma = J^T F  (J = dexp = J_l(lambda))
//                      semi-implicit Euler in the algebra, per-call dt; T_mod = T_d exp(lambda)
// Fixed-size Eigen types (J_b up to 6 x kMaxDof, stack storage): no heap allocation per tick.
// InteractionTick (cpp/include/hri_core/interaction.hpp): the whole gated tick in one call.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "hri_core/interaction.hpp"
#include "py_check.hpp"

namespace py = pybind11;

namespace hri_core::interaction {

inline void check_dof(const MatJ& Jb, const VecN& bias) {
  if (Jb.cols() != bias.size())
    throw std::invalid_argument("body_jacobian columns (" + std::to_string(Jb.cols()) +
                                ") != bias size (" + std::to_string(bias.size()) + ")");
}

// InteractionTick.tick / bench_tick_ns: every joint-sized input has params.n entries
inline TickInput tick_input(const InteractionTick& k, const VecN& q, const VecN& dq, const Mat4& T, const Vec6& Vb,
                            const MatJ& Jb, const VecN& g, const VecN& c) {
  const int n = k.params().n;
  if (q.size() != n || dq.size() != n || g.size() != n || c.size() != n || Jb.cols() != n)
    throw std::invalid_argument("InteractionTick.tick: q, dq, gravity, coriolis need n entries, body_jacobian 6 x n (n = " +
                                std::to_string(n) + ")");
  return TickInput{&q, &dq, &T, &Vb, &Jb, &g, &c};
}

// an n x n mass matrix argument (a py_check::Array: real dtype checked, float64 C-contiguous)
inline MatN mass_matrix_of(const py_check::Array& a, int n, const char* what) {
  if (a.ndim() != 2 || a.shape(0) != n || a.shape(1) != n)
    throw std::invalid_argument(std::string(what) + ": mass_matrix must have shape (n, n) with n = " +
                                std::to_string(n) + ", got " + py_check::shape_str(a));
  MatN M(n, n);
  const double* d = a.data();
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) M(i, j) = d[i * n + j];
  return M;
}

inline int index_of(const std::string& v, std::initializer_list<const char*> names, const char* what) {
  int i = 0;
  for (const char* n : names) {
    if (v == n) return i;
    ++i;
  }
  throw std::invalid_argument(std::string("TickParams: unknown ") + what + " '" + v + "'");
}

}  // namespace hri_core::interaction

void bind_interaction(py::module_& root) {
  namespace I = hri_core::interaction;
  namespace C = hri_core::py_check;
  using C::checked;
  // every Eigen argument is checked before it is converted (py_check.hpp); Fin: finite too
  using Mat4 = C::Checked<hri_core::se3::Mat4>;
  using Vec6 = C::Checked<hri_core::se3::Vec6>;
  using Mat6 = C::Checked<hri_core::se3::Mat6>;
  using MatJ = C::Checked<I::MatJ>;
  using VecN = C::Checked<I::VecN>;
  using FinMat6 = C::Finite<hri_core::se3::Mat6>;
  using FinVec6 = C::Finite<hri_core::se3::Vec6>;
  py::module_ m = root.def_submodule(
      "interaction", "hri_interaction 1 kHz kernels: Lie-PD impedance torque, Lie admittance "
                     "(Chang 2026 app. H). Twist order (w, v), body frame.");
  m.def(
      "lie_impedance_torque",
      [](const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias, const Mat4& Tref,
         const Mat6& K, const Mat6& D, std::optional<Vec6> Vref) {
        I::check_dof(Jb, bias);
        const hri_core::se3::Vec6* vr = Vref ? &**Vref : nullptr;
        return I::lie_impedance_torque(T, Vb, Jb, bias, Tref, K, D, vr);
      },
      py::arg("world_T_ee"), py::arg("body_twist"), py::arg("body_jacobian"), py::arg("bias"),
      py::arg("world_T_ref"), py::arg("K"), py::arg("D"), py::arg("ref_body_twist") = py::none(),
      "tau = J_b^T(-K e - D edot) + bias, e = Log(T_ref^-1 T) (body frame).");
  m.def(
      "gic_torque",
      [](const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias, const Mat4& Tref,
         const Mat6& K, const Mat6& D, std::optional<Vec6> Vref) {
        I::check_dof(Jb, bias);
        const hri_core::se3::Vec6* vr = Vref ? &**Vref : nullptr;
        return I::gic_torque(*T, *Vb, *Jb, *bias, *Tref, *K, *D, vr);
      },
      py::arg("world_T_ee"), py::arg("body_twist"), py::arg("body_jacobian"), py::arg("bias"),
      py::arg("world_T_ref"), py::arg("K"), py::arg("D"), py::arg("ref_body_twist") = py::none(),
      "GIC (Seo et al. 2023): tau = J_b^T(-f_G - D e_V) + bias (geometric_laws.hpp).");
  m.def(
      "gic_elastic_wrench",
      [](const Mat4& T, const Mat4& Tref, const Mat6& K) { return I::gic_elastic_wrench(*T, *Tref, *K); },
      py::arg("world_T_ee"), py::arg("world_T_ref"), py::arg("K"),
      "f_G = (f_R, f_p): the body-frame gradient of the GIC potential");
  m.def(
      "gic_potential",
      [](const Mat4& T, const Mat4& Tref, const Mat6& K) { return I::gic_potential(*T, *Tref, *K); },
      py::arg("world_T_ee"), py::arg("world_T_ref"), py::arg("K"),
      "Psi = 1/2 e_p^T R_r K_p R_r^T e_p + tr(K_R (I - R_r^T R)) (J)");
  m.def(
      "lie_osd_torque",
      [](const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias, const Mat4& Tref, const Mat6& K,
         const Mat6& D, const Mat6& Md, const C::Array& M, const Vec6& Jdq, std::optional<Vec6> Vref,
         std::optional<Vec6> Fext) {
        I::check_dof(Jb, bias);
        const I::MatN Mq = I::mass_matrix_of(M, static_cast<int>(Jb->cols()), "lie_osd_torque");
        I::VecN tau;
        const char* err = I::lie_osd_torque(*T, *Vb, *Jb, *bias, *Tref, *K, *D, *Md, Vref ? &**Vref : nullptr,
                                            Fext ? &**Fext : nullptr, Mq, *Jdq, tau);
        if (err != nullptr) throw std::invalid_argument(std::string("lie_osd_torque: ") + err);
        return tau;
      },
      py::arg("world_T_ee"), py::arg("body_twist"), py::arg("body_jacobian"), py::arg("bias"),
      py::arg("world_T_ref"), py::arg("K"), py::arg("D"), py::arg("M_d"), py::arg("mass_matrix"),
      py::arg("jdot_qdot"), py::arg("ref_body_twist") = py::none(), py::arg("wrench_body") = py::none(),
      "Lie-group impedance with operational-space dynamics (geometric_laws.hpp): "
      "tau = J_b^T (Lambda (Vdot_ref - Jdot_b qdot) - F_ext) + bias.");
  m.def(
      "law_switch_error",
      [](const std::string& from, const std::string& to, const Vec6& lam, const Vec6& lam_dot,
         bool blending) -> std::optional<std::string> {
        const std::initializer_list<const char*> laws = {"lie", "cartesian", "gic", "lie_osd"};
        const char* e = I::law_switch_error(I::index_of(from, laws, "law"), I::index_of(to, laws, "law"), *lam,
                                            *lam_dot, blending);
        return e != nullptr ? std::optional<std::string>(e) : std::nullopt;
      },
      py::arg("from_law"), py::arg("to_law"), py::arg("lam"), py::arg("lam_dot"), py::arg("blending"),
      "Why the torque law cannot switch now (None: it can): within the Lie family always; to or from "
      "'cartesian' only with the admittance at rest; never while a previous switch blends in.");
  py::class_<I::LieAdmittance>(m, "LieAdmittance")
      .def(py::init([](const FinMat6& M, const FinMat6& D, const FinMat6& K) {
             I::LieAdmittance a;
             a.M = *M;
             a.D = *D;
             a.K = *K;
             return a;
           }),
           py::arg("M"), py::arg("D"), py::arg("K"))
      .def("step", [](I::LieAdmittance& a, const FinVec6& F, double dt) { a.step(F, dt); }, py::arg("wrench_body"),
           py::arg("dt"), "one semi-implicit Euler step of app. H with this call's dt")
      .def_property("lam", [](const I::LieAdmittance& a) { return a.lam; },
                    [](I::LieAdmittance& a, const FinVec6& v) { a.lam = *v; })
      .def_property("lam_dot", [](const I::LieAdmittance& a) { return a.lam_dot; },
                    [](I::LieAdmittance& a, const FinVec6& v) { a.lam_dot = *v; });

  namespace Sf = hri_core::safety;
  m.attr("TICK_FLAGS") = [] {
    py::dict d;
    for (int i = 0; i < I::kNumTickFlags; ++i) d[I::kTickFlagNames[i]] = 1u << i;
    return d;
  }();
  auto tick_params = py::class_<I::TickParams>(
      m, "TickParams",
      "The parameters of InteractionTick / rt.RtLoop as named fields (SI units, twist order (w, v); "
      "hri_interaction.core.controller.tick_params(InteractionParams, n, law) fills it from the config).")
      .def(py::init<>())
      .def_readwrite("n", &I::TickParams::n, "joints (1..16)")
      .def_property(
          "law", [](const I::TickParams& p) { return std::string(I::kLawNames[p.law]); },
          [](I::TickParams& p, const std::string& v) {
            p.law = I::index_of(v, {"lie", "cartesian", "gic", "lie_osd"}, "law");
          },
          "'lie' (Lie-PD + app. H admittance) | 'cartesian' (the classical pair) | 'gic' (geometric "
          "impedance, Seo et al.) | 'lie_osd' (Lie-group impedance with operational-space dynamics); "
          "gic and lie_osd share the Lie admittance")
      .def_property(
          "filter",
          [](const I::TickParams& p) {
            static const char* names[] = {"none", "passivity", "tdpc", "wave", "jitter"};
            return std::string(names[p.filter]);
          },
          [](I::TickParams& p, const std::string& v) {
            p.filter = I::index_of(v, {"none", "passivity", "tdpc", "wave", "jitter"}, "filter");
          },
          "wrench filter: 'none' | 'passivity' (PO/PC) | 'tdpc' | 'wave' | 'jitter' (delay compensator)")
      .def_readwrite("gravity_compensation", &I::TickParams::gravity_compensation)
      .def_readwrite("coriolis_compensation", &I::TickParams::coriolis_compensation)
      .def_readwrite("energy_floor_j", &I::TickParams::energy_floor_j)
      .def_readwrite("max_damping", &I::TickParams::max_damping, "PO/PC alpha cap (> 0; inf = uncapped)")
      .def_readwrite("settle_max_linear_m_s", &I::TickParams::settle_max_linear_m_s)
      .def_readwrite("settle_max_angular_rad_s", &I::TickParams::settle_max_angular_rad_s)
      .def_readwrite("max_linear_m_s", &I::TickParams::max_linear_m_s)
      .def_readwrite("max_angular_rad_s", &I::TickParams::max_angular_rad_s)
      .def_readwrite("reference_max_linear_m_s", &I::TickParams::reference_max_linear_m_s)
      .def_readwrite("reference_max_angular_rad_s", &I::TickParams::reference_max_angular_rad_s)
      .def_readwrite("singular_sigma_min", &I::TickParams::singular_sigma_min)
      .def_readwrite("reference_interpolation_max_s", &I::TickParams::reference_interpolation_max_s,
                     "targets at most this far apart (s) are approached at their arrival speed (first-order hold)")
      .def_readwrite("reference_feedforward", &I::TickParams::reference_feedforward,
                     "Lie law: V_ref includes the governed reference's twist Log(T_d,prev^-1 T_d)/dt")
      .def_property(
          "torque_max_nm",
          [](const I::TickParams& p) -> std::optional<I::VecN> {
            if (!p.has_torque_max) return std::nullopt;
            return p.torque_max_nm;
          },
          [](I::TickParams& p, std::optional<VecN> v) {
            p.has_torque_max = v.has_value();
            p.torque_max_nm = v ? I::VecN(**v) : I::VecN(I::VecN::Zero(0));
          },
          "per-joint torque clip (N m) or None");
  C::def_checked_readwrite(tick_params, "K", &I::TickParams::K, "6x6 impedance stiffness (initial)");
  C::def_checked_readwrite(tick_params, "D", &I::TickParams::D, "6x6 impedance damping (initial)");
  C::def_checked_readwrite(tick_params, "M_adm", &I::TickParams::M_adm);
  C::def_checked_readwrite(tick_params, "M_osd", &I::TickParams::M_osd, "law lie_osd: desired inertia M_d (SPD)");
  C::def_checked_readwrite(tick_params, "D_adm", &I::TickParams::D_adm);
  C::def_checked_readwrite(tick_params, "K_adm", &I::TickParams::K_adm);
  C::def_checked_readwrite(tick_params, "compliant_axes", &I::TickParams::compliant_axes, "hybrid S (6 values in {0, 1})");
  C::def_checked_readwrite(tick_params, "wave_damping", &I::TickParams::wave_damping);
  C::def_checked_readwrite(tick_params, "jitter_alpha_base", &I::TickParams::jitter_alpha_base,
                           "filter 'jitter': alpha = alpha_base + alpha_scale sigma/mu");
  C::def_checked_readwrite(tick_params, "jitter_alpha_scale", &I::TickParams::jitter_alpha_scale);
  py::class_<I::InteractionTick>(
      m, "InteractionTick",
      "The whole gated 1 kHz tick of hri_interaction's InteractionController in one call: state "
      "check, reference governor, sigma_min, wrench filter, admittance, twist bound, gain blend, "
      "torque law, the hri_core SafetyChecker gate and the torque clip. PO/PC and TDPC alpha is "
      "capped at max_damping (interaction.passivity.po_pc.max_damping; saturations counted). Slow inputs are pushed "
      "with the setters (validated in Python).")
      .def(py::init([](const I::TickParams& p, const Mat4& world_T_d,
                       std::optional<Sf::SafetyChecker*> safety) {
             Sf::SafetyChecker* chk = safety ? *safety : nullptr;
             if (const char* e = I::params_error(p, chk)) throw std::invalid_argument(e);
             return I::InteractionTick(p, world_T_d, chk);
           }),
           py::arg("params"), py::arg("world_T_d"), py::arg("safety") = py::none(),
           py::keep_alive<1, 4>())
      .def(
          "tick",
          [](I::InteractionTick& k, const VecN& q, const VecN& dq, const Mat4& T, const Vec6& Vb, const MatJ& Jb,
             const VecN& g, const VecN& c, double dt, std::optional<C::Array> M) {
            I::TickInput in = I::tick_input(k, q, dq, T, Vb, Jb, g, c);
            I::MatN Mq;
            if (M) {
              Mq = I::mass_matrix_of(*M, k.params().n, "InteractionTick.tick");
              in.mass_matrix = &Mq;
            }
            I::TickOutput out;
            k.tick(in, dt, out);
            return py::make_tuple(out.tau, out.world_T_ref, out.flags, out.safety_flags, out.sigma_min);
          },
          py::arg("q"), py::arg("dq"), py::arg("world_T_ee"), py::arg("body_twist"),
          py::arg("body_jacobian"), py::arg("gravity"), py::arg("coriolis"), py::arg("dt"),
          py::arg("mass_matrix") = py::none(),
          "-> (tau, world_T_ref, flags (TICK_FLAGS bits), safety_flags (safety.FLAGS bits), sigma_min); "
          "mass_matrix M(q) (n x n) is needed by law lie_osd (without it the tick holds: state_invalid)")
      .def(
          "bench_tick_ns",
          [](I::InteractionTick& k, const VecN& q, const VecN& dq, const Mat4& T, const Vec6& Vb, const MatJ& Jb,
             const VecN& g, const VecN& c, double dt, int n_ticks, std::optional<C::Array> M) {
            I::TickInput in = I::tick_input(k, q, dq, T, Vb, Jb, g, c);
            I::MatN Mq;
            if (M) {
              Mq = I::mass_matrix_of(*M, k.params().n, "InteractionTick.bench_tick_ns");
              in.mass_matrix = &Mq;
            }
            if (n_ticks < 1) throw std::invalid_argument("bench_tick_ns: n must be >= 1");
            I::TickOutput out;
            double sink = 0.0;
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < n_ticks; ++i) {
              k.tick(in, dt, out);
              sink += out.tau(0);
            }
            const auto t1 = std::chrono::steady_clock::now();
            if (sink != sink) throw std::invalid_argument("bench_tick_ns: NaN torque (non-finite input)");
            return std::chrono::duration<double, std::nano>(t1 - t0).count() / n_ticks;
          },
          py::arg("q"), py::arg("dq"), py::arg("world_T_ee"), py::arg("body_twist"), py::arg("body_jacobian"),
          py::arg("gravity"), py::arg("coriolis"), py::arg("dt"), py::arg("n"), py::arg("mass_matrix") = py::none(),
          "Mean ns per tick of n ticks inside C++ (advances this object's state; bench only).")
      .def(
          "set_law",
          [](I::InteractionTick& k, const std::string& law, double blend_s) {
            return k.set_law(I::index_of(law, {"lie", "cartesian", "gic", "lie_osd"}, "law"), blend_s);
          },
          py::arg("law"), py::arg("blend_s") = 0.0,
          "the torque law from the next tick on, the command blended from the old law's torque over "
          "blend_s; False (unchanged) when law_switch_error gives a reason")
      .def_property_readonly("law_blending", &I::InteractionTick::law_blending,
                             "a law switch is blending in")
      .def("set_osd_inertia", checked(&I::InteractionTick::set_osd_inertia), py::arg("M_d"),
           "law lie_osd: desired inertia M_d (False, unchanged, if not SPD)")
      .def_property_readonly("law", [](const I::InteractionTick& k) { return std::string(I::kLawNames[k.law()]); })
      .def_property_readonly("jdot_qdot", [](const I::InteractionTick& k) { return hri_core::se3::Vec6(k.jdot_qdot()); },
                             "law lie_osd: Jdot_b qdot of the last tick (backward difference of J_b)")
      .def("set_target", checked(&I::InteractionTick::set_target), py::arg("world_T_target"))
      .def("set_wrench", checked(&I::InteractionTick::set_wrench), py::arg("wrench_body"), py::arg("ok"))
      .def("set_gains", checked(&I::InteractionTick::set_gains), py::arg("K"), py::arg("D"), py::arg("blend_s"))
      .def("set_admittance", checked(&I::InteractionTick::set_admittance), py::arg("M"), py::arg("D"), py::arg("K"))
      .def("set_mode", &I::InteractionTick::set_mode, py::arg("mode"), py::arg("settle_until_s"))
      .def("set_frozen", &I::InteractionTick::set_frozen, py::arg("frozen"))
      .def("hold_at", checked(&I::InteractionTick::hold_at), py::arg("world_T"),
           "the stop input: reference and target := world_T, admittance zeroed, frozen")
      .def_property_readonly("reference_twist", [](const I::InteractionTick& k) { return hri_core::se3::Vec6(k.reference_twist()); },
                             "body twist of the governed reference on the last tick (feed-forward)")
      .def("reset_filter", &I::InteractionTick::reset_filter)
      .def("set_link_statistics", &I::InteractionTick::set_link_statistics, py::arg("mean_s"), py::arg("std_s"),
           "filter 'jitter': the wrench link's delay mean and std (s)")
      .def_property_readonly("link_spread", &I::InteractionTick::link_spread, "sigma/mu of the wrench link (filter 'jitter')")
      .def("set_filter_state", checked(&I::InteractionTick::set_filter_state), py::arg("energy_j"),
           py::arg("dissipated_j"), py::arg("min_energy_j"), py::arg("violations"),
           py::arg("energy_dof_j"), py::arg("saturations") = 0)
      .def("modified_pose", checked(&I::InteractionTick::modified_pose), py::arg("world_T_d"))
      .def("twist", &I::InteractionTick::twist)
      .def_property_readonly("time_s", &I::InteractionTick::time_s)
      .def_property_readonly("world_T_d", [](const I::InteractionTick& k) { return hri_core::se3::Mat4(k.world_T_d()); })
      .def_property_readonly("K", [](const I::InteractionTick& k) { return hri_core::se3::Mat6(k.K()); })
      .def_property_readonly("D", [](const I::InteractionTick& k) { return hri_core::se3::Mat6(k.D()); })
      .def_property_readonly("last_tau", [](const I::InteractionTick& k) { return I::VecN(k.last_tau()); })
      .def_property_readonly("last_ref", [](const I::InteractionTick& k) { return hri_core::se3::Mat4(k.last_ref()); })
      .def_property("lam", [](I::InteractionTick& k) { return hri_core::se3::Vec6(k.lam()); },
                    [](I::InteractionTick& k, const Vec6& v) { k.lam() = *v; })
      .def_property("lam_dot", [](I::InteractionTick& k) { return hri_core::se3::Vec6(k.lam_dot()); },
                    [](I::InteractionTick& k, const Vec6& v) { k.lam_dot() = *v; })
      .def_property_readonly("energy_j", &I::InteractionTick::energy_j)
      .def_property_readonly("dissipated_j", &I::InteractionTick::dissipated_j)
      .def_property_readonly("min_energy_j", &I::InteractionTick::min_energy_j)
      .def_property_readonly("violations", &I::InteractionTick::violations)
      .def_property_readonly("saturations", &I::InteractionTick::saturations,
                             "ticks where the PO/PC (TDPC) alpha hit max_damping")
      .def_property_readonly("last_alpha", [](const I::InteractionTick& k) { return hri_core::se3::Vec6(k.last_alpha()); },
                             "alpha applied on the last filtered tick (PO/PC: entry 0; TDPC: per DoF)")
      .def_property_readonly("energy_dof_j", [](const I::InteractionTick& k) { return hri_core::se3::Vec6(k.energy_dof_j()); })
      .def_property_readonly("mode", &I::InteractionTick::mode)
      .def_property_readonly("frozen", &I::InteractionTick::frozen);
}
