// hri_interaction C++ kernels (submodule hri_core._hri_core.interaction), owner: hri_interaction.
//
// The 1 kHz hot path of seed 002 ch. 12 / app. H, twist order (w, v), body frame:
//   Lie-PD impedance   tau = J_b^T (-K e - D edot) + bias,  e = Log(T_ref^-1 T),
//                      edot = V_b - Ad_{T^-1 T_ref} V_ref
//   Lie admittance     M_l = J^T M J, D_l = J^T (D J + M Jdot), gamma = J^T F  (J = dexp = J_l(lambda))
//                      semi-implicit Euler in the algebra, per-call dt; T_mod = T_d exp(lambda)
// Fixed-size Eigen types (J_b up to 6 x kMaxDof, stack storage): no heap allocation per tick.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "hri_core/se3.hpp"

namespace py = pybind11;

namespace hri_core::interaction {
using namespace hri_core::se3;

constexpr int kMaxDof = 16;
using MatJ = Eigen::Matrix<double, 6, Eigen::Dynamic, Eigen::ColMajor, 6, kMaxDof>;
using VecN = Eigen::Matrix<double, Eigen::Dynamic, 1, Eigen::ColMajor, kMaxDof, 1>;

inline VecN lie_impedance_torque(const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias,
                                 const Mat4& Tref, const Mat6& K, const Mat6& D, const Vec6* Vref) {
  const Mat4 refTee = inverse(Tref) * T;
  const Vec6 e = log(refTee);
  Vec6 ed = Vb;
  if (Vref != nullptr) ed -= adjoint(inverse(refTee)) * (*Vref);
  const Vec6 F = -K * e - D * ed;
  return Jb.transpose() * F + bias;
}

struct LieAdmittance {
  Mat6 M, D, K;
  Vec6 lam = Vec6::Zero(), lam_dot = Vec6::Zero();

  void step(const Vec6& F, double dt) {
    const Mat6 J = left_jacobian(lam);
    Mat6 Ml = J.transpose() * M * J;
    Ml = 0.5 * (Ml + Ml.transpose()).eval();
    Mat6 Dl = J.transpose() * (D * J);
    if (!lam_dot.isZero(0.0)) Dl.noalias() += J.transpose() * (M * left_jacobian_dot(lam, lam_dot));
    const Vec6 rhs = J.transpose() * F - Dl * lam_dot - K * lam;
    const Vec6 acc = Ml.llt().solve(rhs);
    lam_dot += dt * acc;
    lam += dt * lam_dot;
  }
};

class InteractionKernel {
 public:
  InteractionKernel(const Mat6& M, const Mat6& Da, const Mat6& Ka, const Mat6& K, const Mat6& D)
      : K_(K), D_(D) {
    adm_.M = M;
    adm_.D = Da;
    adm_.K = Ka;
  }
  VecN tick(const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias, const Mat4& Td,
            const Vec6& F, double dt) {
    adm_.step(F, dt);
    const Mat4 Tref = Td * exp(adm_.lam);
    const Vec6 Vref = right_jacobian(adm_.lam) * adm_.lam_dot;
    return lie_impedance_torque(T, Vb, Jb, bias, Tref, K_, D_, &Vref);
  }
  Vec6 lam() const { return adm_.lam; }
  Vec6 lam_dot() const { return adm_.lam_dot; }
  void reset(const Vec6& lam, const Vec6& lam_dot) {
    adm_.lam = lam;
    adm_.lam_dot = lam_dot;
  }
  void set_impedance(const Mat6& K, const Mat6& D) {
    K_ = K;
    D_ = D;
  }
  // Mean ns per tick of n ticks run inside C++ (no Python crossing); state restored afterwards.
  double bench_tick_ns(const Mat4& T, const Vec6& Vb, const MatJ& Jb, const VecN& bias,
                       const Mat4& Td, const Vec6& F, double dt, int n) {
    const LieAdmittance saved = adm_;
    double sink = 0.0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) sink += tick(T, Vb, Jb, bias, Td, F, dt)(0);
    const auto t1 = std::chrono::steady_clock::now();
    adm_ = saved;
    if (sink != sink) throw std::runtime_error("NaN in bench tick");
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
  }

 private:
  LieAdmittance adm_;
  Mat6 K_, D_;
};

inline void check_dof(const MatJ& Jb, const VecN& bias) {
  if (Jb.cols() != bias.size())
    throw std::invalid_argument("body_jacobian columns (" + std::to_string(Jb.cols()) +
                                ") != bias size (" + std::to_string(bias.size()) + ")");
}

}  // namespace hri_core::interaction

void bind_interaction(py::module_& root) {
  namespace I = hri_core::interaction;
  using hri_core::se3::Mat4;
  using hri_core::se3::Mat6;
  using hri_core::se3::Vec6;
  py::module_ m = root.def_submodule(
      "interaction", "hri_interaction 1 kHz kernels: Lie-PD impedance torque, Lie admittance "
                     "(seed 002 app. H). Twist order (w, v), body frame.");
  m.def(
      "lie_impedance_torque",
      [](const Mat4& T, const Vec6& Vb, const I::MatJ& Jb, const I::VecN& bias, const Mat4& Tref,
         const Mat6& K, const Mat6& D, std::optional<Vec6> Vref) {
        I::check_dof(Jb, bias);
        return I::lie_impedance_torque(T, Vb, Jb, bias, Tref, K, D, Vref ? &*Vref : nullptr);
      },
      py::arg("world_T_ee"), py::arg("body_twist"), py::arg("body_jacobian"), py::arg("bias"),
      py::arg("world_T_ref"), py::arg("K"), py::arg("D"), py::arg("ref_body_twist") = py::none(),
      "tau = J_b^T(-K e - D edot) + bias, e = Log(T_ref^-1 T) (body frame).");
  py::class_<I::LieAdmittance>(m, "LieAdmittance")
      .def(py::init([](const Mat6& M, const Mat6& D, const Mat6& K) {
             I::LieAdmittance a;
             a.M = M;
             a.D = D;
             a.K = K;
             return a;
           }),
           py::arg("M"), py::arg("D"), py::arg("K"))
      .def("step", &I::LieAdmittance::step, py::arg("wrench_body"), py::arg("dt"),
           "one semi-implicit Euler step of app. H with this call's dt")
      .def_readwrite("lam", &I::LieAdmittance::lam)
      .def_readwrite("lam_dot", &I::LieAdmittance::lam_dot);
  py::class_<I::InteractionKernel>(m, "InteractionKernel")
      .def(py::init<const Mat6&, const Mat6&, const Mat6&, const Mat6&, const Mat6&>(),
           py::arg("M"), py::arg("D_adm"), py::arg("K_adm"), py::arg("K"), py::arg("D"))
      .def(
          "tick",
          [](I::InteractionKernel& k, const Mat4& T, const Vec6& Vb, const I::MatJ& Jb,
             const I::VecN& bias, const Mat4& Td, const Vec6& F, double dt) {
            I::check_dof(Jb, bias);
            return k.tick(T, Vb, Jb, bias, Td, F, dt);
          },
          py::arg("world_T_ee"), py::arg("body_twist"), py::arg("body_jacobian"), py::arg("bias"),
          py::arg("world_T_d"), py::arg("wrench_body"), py::arg("dt"),
          "admittance step, T_mod = T_d exp(lambda), impedance torque towards T_mod")
      .def("bench_tick_ns", &I::InteractionKernel::bench_tick_ns)
      .def("reset", &I::InteractionKernel::reset)
      .def("set_impedance", &I::InteractionKernel::set_impedance)
      .def_property_readonly("lam", &I::InteractionKernel::lam)
      .def_property_readonly("lam_dot", &I::InteractionKernel::lam_dot);
}
