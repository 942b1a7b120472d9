//! Dynamics of the reduced model: the first k reduced coordinates (the lowest vibration
//! modes) carry mass and move by an energy-conserving step, the others (static shapes:
//! contact shapes and nonlinear corrections) stay in equilibrium at the step's end, as
//! the modal backend's residual flexibility does.
//!
//! With G(y) the reduced potential Π minimised over the static coordinates under the
//! step's constraints (y the dynamic coordinates), the step is the discrete-gradient
//! scheme of Gonzalez (1996) for M ÿ = −∇G(y) − C ẏ:
//!
//!   M (v⁺ − v)/h = −∇̄G − C Δ/h,  Δ = y⁺ − y = h (v + v⁺)/2,
//!   ∇̄G = ḡ + [(G(y⁺) − G(y) − ḡ·Δ) / Δ·Δ] Δ,  ḡ = (∇G(y) + ∇G(y⁺))/2,
//!
//! so that ∇̄G·Δ = G(y⁺) − G(y) exactly and, without damping and with the constraints
//! held still, ½ vᵀMv + G is the same after the step as before (docs/math.md §12). The
//! trapezoidal ḡ needs no solve at the midpoint; the static coordinates satisfy their
//! equilibrium at the step's end, not at its middle: a massless coordinate under the
//! midpoint rule would flip to its mirror image every step (the stiff contact shapes
//! at the 5 ms step). Unconditionally stable at any step size.

/// The dynamic part of a reduced model's state and its mass and damping.
#[derive(Clone, Debug)]
pub struct ReducedDynamics {
    /// Dynamic coordinates: the first `k` of the reduced coordinates.
    k: usize,
    /// Reduced mass UᵀMU over them (s², the coordinates being in √J; row-major k × k).
    mass: Vec<f64>,
    /// Reduced Rayleigh damping α₁ I + α₂ UᵀMU (s; row-major k × k).
    damping: Vec<f64>,
    /// ẏ at the start of the next step (√J/s).
    velocity: Vec<f64>,
    /// G at the start of the next step (J).
    potential: f64,
    /// ∇G at the start of the next step (√J).
    gradient: Vec<f64>,
}

/// Below this share of the energies' size, the discrete-gradient correction's numerator
/// G(y⁺) − G(y) − ḡ·Δ is round-off (a sum over elements of differences of O(μ)
/// terms), and the correction is left out: the energy error it leaves per step is that
/// small.
const CORRECTION_ROUND_OFF: f64 = 1e-12;

/// Kinetic energy and |∇G|², relative to the potential, below which a state counts as
/// at rest ([`ReducedDynamics::at_rest`]).
const REST: f64 = 1e-12;

impl ReducedDynamics {
    /// Dynamics over the first `k = √mass.len()` coordinates with reduced mass `mass`
    /// (s², row-major) and Rayleigh damping α₁ (s) on the stiffness (I in these
    /// K-orthonormal coordinates) and α₂ (1/s) on the mass; at rest.
    pub fn new(mass: Vec<f64>, alpha1: f64, alpha2: f64) -> Self {
        let k = (mass.len() as f64).sqrt().round() as usize;
        debug_assert_eq!(k * k, mass.len(), "a square mass matrix");
        let damping = (0..k * k)
            .map(|i| alpha2 * mass[i] + if i / k == i % k { alpha1 } else { 0.0 })
            .collect();
        Self {
            k,
            mass,
            damping,
            velocity: vec![0.0; k],
            potential: 0.0,
            gradient: vec![0.0; k],
        }
    }

    /// Dynamic coordinates.
    pub fn coordinates(&self) -> usize {
        self.k
    }

    /// Kinetic energy ½ ẏᵀMẏ (J).
    pub fn kinetic_energy(&self) -> f64 {
        0.5 * quadratic(&self.mass, &self.velocity, &self.velocity)
    }

    /// G at the end of the last step (J): the potential the next step starts from.
    pub fn potential(&self) -> f64 {
        self.potential
    }

    /// Back at rest: no velocity, no potential.
    pub fn reset(&mut self) {
        self.velocity.fill(0.0);
        self.gradient.fill(0.0);
        self.potential = 0.0;
    }

    /// Whether the state is at rest: kinetic energy and |∇G|² (J) are below round-off
    /// of the potential, so a step under the same constraints would leave it as it is.
    pub fn at_rest(&self) -> bool {
        let floor = REST * self.potential.abs();
        let gradient: f64 = self.gradient.iter().map(|g| g * g).sum();
        self.kinetic_energy() <= floor && gradient <= floor
    }

    /// Stops the motion (velocity zero), keeping the potential: for a state held still
    /// whose kinetic energy has decayed below round-off of the potential.
    pub fn stop(&mut self) {
        self.velocity.fill(0.0);
    }

    /// Sets G and ∇G at the current state without a step (J, √J): after the state was
    /// solved statically.
    pub fn set_potential(&mut self, potential: f64, gradient: &[f64]) {
        self.potential = potential;
        self.gradient.copy_from_slice(&gradient[..self.k]);
    }

    /// The step of length `h` (s) from the dynamic coordinates `start`; `conservative`
    /// when the step's constraints, loads and basis are the last step's, so that the
    /// stored G is the potential at the start under them: only then does the
    /// discrete-gradient correction apply (a moving probe does work anyway).
    pub(super) fn step<'a>(
        &'a self,
        start: &'a [f64],
        h: f64,
        conservative: bool,
    ) -> DynamicStep<'a> {
        DynamicStep {
            dynamics: self,
            start,
            h,
            conservative,
            correction: vec![0.0; self.k],
        }
    }

    /// Ends a step from `start` (its dynamic coordinates) to `end` of length `h`:
    /// v⁺ = 2Δ/h − v, and G, ∇G at the end (J, √J) for the next step.
    pub(super) fn finish(
        &mut self,
        start: &[f64],
        end: &[f64],
        h: f64,
        potential: f64,
        gradient: &[f64],
    ) {
        for j in 0..self.k {
            self.velocity[j] = 2.0 * (end[j] - start[j]) / h - self.velocity[j];
        }
        self.set_potential(potential, gradient);
    }
}

/// One step's inertial terms, as the reduced Newton solve adds them to the dynamic
/// coordinates' rows (all scaled by 2/h so that the step's Jacobian is the static
/// tangent plus (4/h²)M + (2/h)C).
pub(super) struct DynamicStep<'a> {
    dynamics: &'a ReducedDynamics,
    start: &'a [f64],
    h: f64,
    /// Whether the discrete-gradient correction applies ([`ReducedDynamics::step`]).
    conservative: bool,
    /// 2× the discrete-gradient correction at the last iterate (√J), held fixed while
    /// a Newton iteration's direction and line search use it.
    correction: Vec<f64>,
}

impl DynamicStep<'_> {
    /// Dynamic coordinates.
    pub(super) fn coordinates(&self) -> usize {
        self.dynamics.k
    }

    /// Updates the discrete-gradient correction at the solution `q` with potential
    /// `potential` = Π(q) (J) and `end_gradient` = ∇Π − Aᵀλ over the dynamic
    /// coordinates (√J), solved to `tolerance` (√J); returns how much it changed (√J).
    /// Where the rule's remainder is below what the tolerance leaves of the energy
    /// anyway (tolerance × |Δ|), or below round-off, there is none: the energy error
    /// per step is then that small.
    pub(super) fn update_correction(
        &mut self,
        q: &[f64],
        potential: f64,
        end_gradient: &[f64],
        tolerance: f64,
    ) -> f64 {
        let before = std::mem::take(&mut self.correction);
        self.set_correction(q, potential, end_gradient, tolerance);
        before
            .iter()
            .zip(&self.correction)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt()
    }

    fn set_correction(&mut self, q: &[f64], potential: f64, end_gradient: &[f64], tolerance: f64) {
        self.correction = vec![0.0; self.dynamics.k];
        let d = self.dynamics;
        let k = d.k;
        let delta: Vec<f64> = (0..k).map(|j| q[j] - self.start[j]).collect();
        let dd: f64 = delta.iter().map(|x| x * x).sum();
        let mean_slope: f64 = (0..k)
            .map(|j| 0.5 * (d.gradient[j] + end_gradient[j]) * delta[j])
            .sum();
        let numerator = potential - d.potential - mean_slope;
        let round_off = CORRECTION_ROUND_OFF * (potential.abs() + d.potential.abs());
        let negligible = round_off.max(tolerance * dd.sqrt());
        if !self.conservative || dd == 0.0 || numerator.abs() <= negligible {
            return;
        }
        for (c, x) in self.correction.iter_mut().zip(&delta) {
            *c = 2.0 * numerator / dd * x;
        }
    }

    /// Adds the inertial terms (4/h²)M(Δ − hv) + (2/h)CΔ + ∇G(y) + 2c to the dynamic
    /// rows of the residual `residual` at the iterate `q` (√J).
    pub(super) fn add_residual(&self, q: &[f64], residual: &mut [f64]) {
        let d = self.dynamics;
        let (k, h) = (d.k, self.h);
        let lag: Vec<f64> = (0..k)
            .map(|j| q[j] - self.start[j] - h * d.velocity[j])
            .collect();
        for (i, out) in residual[..k].iter_mut().enumerate() {
            let mut r = d.gradient[i] + self.correction[i];
            for j in 0..k {
                r += 4.0 / (h * h) * d.mass[i * k + j] * lag[j]
                    + 2.0 / h * d.damping[i * k + j] * (q[j] - self.start[j]);
            }
            *out += r;
        }
    }

    /// Adds (4/h²)M + (2/h)C to the dynamic block of the row-major `r × r` Jacobian.
    pub(super) fn add_jacobian(&self, jacobian: &mut [f64], r: usize) {
        let d = self.dynamics;
        let (k, h) = (d.k, self.h);
        for i in 0..k {
            for j in 0..k {
                jacobian[i * r + j] +=
                    4.0 / (h * h) * d.mass[i * k + j] + 2.0 / h * d.damping[i * k + j];
            }
        }
    }

    /// The inertial part of the merit the line search lowers, whose gradient is the
    /// residual's inertial terms with the correction held fixed:
    /// (2/h²)(Δ − hv)ᵀM(Δ − hv) + (1/h)ΔᵀCΔ + (∇G(y) + 2c)·y⁺ (J).
    pub(super) fn merit(&self, q: &[f64]) -> f64 {
        let d = self.dynamics;
        let (k, h) = (d.k, self.h);
        let lag: Vec<f64> = (0..k)
            .map(|j| q[j] - self.start[j] - h * d.velocity[j])
            .collect();
        let delta: Vec<f64> = (0..k).map(|j| q[j] - self.start[j]).collect();
        2.0 / (h * h) * quadratic(&d.mass, &lag, &lag)
            + quadratic(&d.damping, &delta, &delta) / h
            + (0..k)
                .map(|j| (d.gradient[j] + self.correction[j]) * q[j])
                .sum::<f64>()
    }

    /// The size of the inertial forces at the step's start, |(4/h) M v| + |∇G(y)| (√J):
    /// the scale of a released step's residual, where no force is applied.
    pub(super) fn scale(&self) -> f64 {
        let d = self.dynamics;
        let k = d.k;
        let inertia = (0..k)
            .map(|i| {
                (0..k)
                    .map(|j| 4.0 / self.h * d.mass[i * k + j] * d.velocity[j])
                    .sum::<f64>()
                    .powi(2)
            })
            .sum::<f64>()
            .sqrt();
        inertia + d.gradient.iter().map(|g| g * g).sum::<f64>().sqrt()
    }
}

/// aᵀ A b for a row-major square A.
fn quadratic(a: &[f64], x: &[f64], y: &[f64]) -> f64 {
    let k = x.len();
    (0..k)
        .map(|i| x[i] * (0..k).map(|j| a[i * k + j] * y[j]).sum::<f64>())
        .sum()
}
