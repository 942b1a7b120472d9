//! `[contact]`: the probe tip, the contact patch and friction.

use serde::Deserialize;

use super::check::{Check, MAX_COORDINATE};
use super::SceneError;

/// Largest friction coefficient a scene may give (rubber on glass is about 2).
pub const MAX_FRICTION: f64 = 10.0;

/// Probe contact.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContactSpec {
    /// Probe tip radius (m), ≥ 0: the tip is a rigid sphere whose centre is the
    /// trajectory or device position; 0 is a point probe.
    pub probe_radius: f64,
    /// Radius (m) of the contact patch a point probe's force is spread over, ≥ 0; 0 is
    /// the barycentric point of the touched triangle. Absent: twice the mean surface
    /// edge length, so the force does not ripple with the mesh as the probe slides. A
    /// sphere probe (`probe_radius` > 0) has its own footprint and ignores it.
    pub patch_radius: Option<f64>,
    /// Static Coulomb friction coefficient μ_s, ≥ 0; 0 is frictionless.
    pub friction: f64,
    /// Kinetic friction coefficient μ_k, 0 ≤ μ_k ≤ μ_s. Absent: μ_s.
    pub friction_kinetic: Option<f64>,
}

impl ContactSpec {
    /// The kinetic friction coefficient μ_k (absent: μ_s).
    pub fn kinetic_friction(&self) -> f64 {
        self.friction_kinetic.unwrap_or(self.friction)
    }

    pub(super) fn validate(&self, c: &Check) -> Result<(), SceneError> {
        c.non_negative_at_most("contact.probe_radius", self.probe_radius, MAX_COORDINATE)?;
        if let Some(r) = self.patch_radius {
            c.non_negative_at_most("contact.patch_radius", r, MAX_COORDINATE)?;
        }
        c.non_negative_at_most("contact.friction", self.friction, MAX_FRICTION)?;
        if let Some(mu_k) = self.friction_kinetic {
            c.non_negative_at_most("contact.friction_kinetic", mu_k, MAX_FRICTION)?;
        }
        let (mu_s, mu_k) = (self.friction, self.kinetic_friction());
        if mu_k > mu_s {
            return Err(c.invalid(
                "contact.friction_kinetic",
                format!("the kinetic coefficient μ_k = {mu_k} exceeds the static μ_s = {mu_s}"),
            ));
        }
        Ok(())
    }
}
