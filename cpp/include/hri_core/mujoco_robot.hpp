// hri_core::rt::mj_steps — physics steps on the caller's thread (the bindings' mj_step).
// hri_core::rt::MujocoRobot — the simulated arm behind rt::RobotInterface, stepped through
// MuJoCo's C API on the loop's thread (needs <mujoco/mujoco.h>; built when the mujoco wheel is
// found, see cpp/setup.py). MujocoArmModel — the same model terms at a *measured* (q, dq), never
// stepped: what a hardware driver's read() uses (docs/realtime.md "Hardware driver").
//
//   read   q, dq of the named joints; world_T_ee of the site; J_b = [R^T J_w; R^T J_v] (mj_jacSite,
//          world-aligned at the site); V_b = J_b dq; g(q) = mj_rne at zero velocity; c = qfrc_bias - g;
//          M(q) = the joints' rows/columns of mj_fullM;
//          wrench_body = the applied push in the EE frame (an ideal, tared wrist F/T sensor).
//   write  ctrl[actuator of joint j] = tau_j, xfrc_applied = the push (force at the site point,
//          moment r x f added), mj_step2 (actuation, acceleration, integration) then mj_step1
//          (positions/velocities of the new state), so every read sees a consistent state.
// The model must have one torque actuator per joint (named like the joint, else found by its joint
// transmission: hri_sim.models.load_arm(..., "torque") of any arm), and its timestep must equal the loop period. Nothing is allocated after the
// constructor; MuJoCo's own work memory is the mjData arena.
#pragma once

#include <mujoco/mujoco.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "hri_core/rt.hpp"

namespace hri_core::rt {

/// `n` physics steps of `d` (mj_step), on the caller's thread: the bindings' mj_step, which calls
/// it holding the GIL (rt_bindings.cpp).
inline void mj_steps(const mjModel* m, mjData* d, int n) {
  for (int i = 0; i < n; ++i) mj_step(m, d);
}

/// Model terms of an arm from a MuJoCo model: world_T_ee of a site, J_b, V_b, g(q), c(q, dq).
/// terms() reads the current position/velocity stages of `d`; update(q, dq) first sets the named
/// joints and recomputes those stages (mj_fwdPosition + mj_fwdVelocity), for a measured state.
class MujocoArmModel {
 public:
  MujocoArmModel(const mjModel* m, mjData* d, const std::vector<std::string>& joints,
                 const std::string& site)
      : m_(m), d_(d), n_(static_cast<int>(joints.size())) {
    if (m == nullptr || d == nullptr) throw std::invalid_argument("MujocoRobot: null model/data");
    if (n_ < 1 || n_ > kMaxDof) throw std::invalid_argument("MujocoRobot: 1..16 joints");
    for (const std::string& j : joints) {
      const int id = mj_name2id(m, mjOBJ_JOINT, j.c_str());
      if (id < 0) throw std::invalid_argument("MujocoRobot: joint '" + j + "' not in the model");
      jid_.push_back(id);
      qadr_.push_back(m->jnt_qposadr[id]);
      vadr_.push_back(m->jnt_dofadr[id]);
    }
    site_ = mj_name2id(m, mjOBJ_SITE, site.c_str());
    if (site_ < 0) throw std::invalid_argument("MujocoRobot: site '" + site + "' not in the model");
    body_ = m->site_bodyid[site_];
    jacp_.assign(3 * m->nv, 0.0);
    jacr_.assign(3 * m->nv, 0.0);
    g_.assign(m->nv, 0.0);
    qvel_.assign(m->nv, 0.0);
    cvel_.assign(6 * m->nbody, 0.0);
    fullM_.assign(static_cast<size_t>(m->nv) * m->nv, 0.0);
  }

  int dof() const { return n_; }
  const mjModel* model() const { return m_; }
  mjData* data() const { return d_; }
  int joint_id(int j) const { return jid_[j]; }
  int site() const { return site_; }
  int body() const { return body_; }

  /// Sets q, dq of the named joints and recomputes the position and velocity stages.
  void update(const VecN& q, const VecN& dq) {
    for (int j = 0; j < n_; ++j) {
      d_->qpos[qadr_[j]] = q(j);
      d_->qvel[vadr_[j]] = dq(j);
    }
    mj_fwdPosition(m_, d_);
    mj_fwdVelocity(m_, d_);
  }

  /// q, dq, world_T_ee, J_b = [R^T J_w; R^T J_v], V_b = J_b dq, g = mj_rne at zero velocity
  /// (joint and body velocities zeroed), c = qfrc_bias - g, time.
  void terms(RobotState& s) {
    const mjModel* m = m_;
    mjData* d = d_;
    Mat3 R;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) R(r, c) = d->site_xmat[9 * site_ + 3 * r + c];
    s.world_T_ee.setIdentity();
    s.world_T_ee.topLeftCorner<3, 3>() = R;
    for (int k = 0; k < 3; ++k) s.world_T_ee(k, 3) = d->site_xpos[3 * site_ + k];
    mj_jacSite(m, d, jacp_.data(), jacr_.data(), site_);
    const int nv = m->nv;
    for (int j = 0; j < n_; ++j) {
      const int v = vadr_[j];
      s.q(j) = d->qpos[qadr_[j]];
      s.dq(j) = d->qvel[v];
      Vec3 jw(jacr_[v], jacr_[nv + v], jacr_[2 * nv + v]);
      Vec3 jv(jacp_[v], jacp_[nv + v], jacp_[2 * nv + v]);
      s.body_jacobian.block<3, 1>(0, j) = R.transpose() * jw;
      s.body_jacobian.block<3, 1>(3, j) = R.transpose() * jv;
    }
    s.body_twist = s.body_jacobian * s.dq;
    std::copy(d->qvel, d->qvel + nv, qvel_.begin());
    std::copy(d->cvel, d->cvel + 6 * m->nbody, cvel_.begin());
    std::fill(d->qvel, d->qvel + nv, 0.0);
    std::fill(d->cvel, d->cvel + 6 * m->nbody, 0.0);
    mj_rne(m, d, 0, g_.data());
    std::copy(qvel_.begin(), qvel_.end(), d->qvel);
    std::copy(cvel_.begin(), cvel_.end(), d->cvel);
    for (int j = 0; j < n_; ++j) {
      s.gravity(j) = g_[vadr_[j]];
      s.coriolis(j) = d->qfrc_bias[vadr_[j]] - g_[vadr_[j]];
    }
    mj_fullM(m, d, fullM_.data());  // M(q) of the named joints (the position stage)
    s.mass_matrix.resize(n_, n_);
    for (int i = 0; i < n_; ++i)
      for (int j = 0; j < n_; ++j) s.mass_matrix(i, j) = fullM_[static_cast<size_t>(vadr_[i]) * nv + vadr_[j]];
    s.time_s = d->time;
  }

 private:
  const mjModel* m_;
  mjData* d_;
  int n_;
  std::vector<int> jid_, qadr_, vadr_;
  int site_ = -1, body_ = -1;
  std::vector<double> jacp_, jacr_, g_, qvel_, cvel_, fullM_;
};

class MujocoRobot : public RobotInterface {
 public:
  MujocoRobot(const mjModel* m, mjData* d, const std::vector<std::string>& joints,
              const std::string& site)
      : arm_(m, d, joints, site) {
    for (int j = 0; j < arm_.dof(); ++j) {
      const int id = arm_.joint_id(j);
      int a = mj_name2id(m, mjOBJ_ACTUATOR, joints[j].c_str());
      for (int k = 0; a < 0 && k < m->nu; ++k)  // else the actuator whose transmission is the joint
        if (m->actuator_trntype[k] == mjTRN_JOINT && m->actuator_trnid[2 * k] == id) a = k;
      if (a < 0) throw std::invalid_argument("MujocoRobot: no actuator drives joint '" + joints[j] + "'");
      aadr_.push_back(a);
    }
    mj_forward(m, d);
  }

  int dof() const override { return arm_.dof(); }
  double timestep() const { return arm_.model()->opt.timestep; }

  bool read(RobotState& s) override {
    arm_.terms(s);
    wrench_to_body(WrenchFrame::kBase, s.world_T_ee, force_, torque_, s.wrench_body);  // the push is in the world frame
    return true;
  }

  void write(const VecN& tau) override {
    const mjModel* m = arm_.model();
    mjData* d = arm_.data();
    const int site = arm_.site(), body = arm_.body();
    Vec3 r;
    for (int k = 0; k < 3; ++k) r(k) = d->site_xpos[3 * site + k] - d->xipos[3 * body + k];
    const Vec3 mom = torque_ + r.cross(force_);
    for (int k = 0; k < 3; ++k) {
      d->xfrc_applied[6 * body + k] = force_(k);
      d->xfrc_applied[6 * body + 3 + k] = mom(k);
    }
    for (int j = 0; j < arm_.dof(); ++j) d->ctrl[aadr_[j]] = tau(j);
    mj_step2(m, d);
    mj_step1(m, d);
  }

  void set_external_wrench(const Vec3& f, const Vec3& m) override {
    force_ = f.allFinite() ? f : Vec3::Zero();
    torque_ = m.allFinite() ? m : Vec3::Zero();
  }

  /// The model at a measured (q, dq) of the named joints, not stepped (a topic driver's state).
  void set_state(const VecN& q, const VecN& dq) { arm_.update(q, dq); }

 private:
  MujocoArmModel arm_;
  std::vector<int> aadr_;
  Vec3 force_ = Vec3::Zero(), torque_ = Vec3::Zero();
};

}  // namespace hri_core::rt
