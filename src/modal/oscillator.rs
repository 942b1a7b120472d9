//! Exact zero-order-hold stepping of the decoupled modal oscillators.
//!
//! Each mode obeys z̈ + c ż + λ z = g with Rayleigh damping c = α₁λ + α₂ (DESIGN §2.2,
//! modal paper eq. 4). Written as ż = A z + b g with state (z, ż),
//! A = [[0, 1], [−λ, −c]], b = (0, 1), a force held constant over a step h gives the
//! exact transition
//!
//!   (z, ż)(t + h) = Φ (z, ż)(t) + Γ g,   Φ = exp(A h),   Γ = ∫₀ʰ exp(A s) ds · b.
//!
//! Both come from one exponential of the augmented 3×3 matrix [[A, b], [0, 0]]·h =
//! [[Φ, Γ], [0, 1]] (Van Loan 1978), computed by nalgebra's scaling-and-squaring Padé
//! exponential. This is the seed's complex-oscillator solution (eqs. 5–11) in real
//! form: under-, critically- and over-damped and rigid (λ = 0) modes take the same
//! path with no special cases, and the step is unconditionally stable.

use nalgebra::Matrix3;

/// The exact one-step map of one mode for a step h: (z, ż) ← Φ (z, ż) + Γ g.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModeTransition {
    /// State transition exp(A h) (row-major: [[z←z, z←ż], [ż←z, ż←ż]]).
    pub phi: [[f64; 2]; 2],
    /// Response of (z, ż) to a unit modal force held over the step (s², s).
    pub gamma: [f64; 2],
}

impl ModeTransition {
    /// Transition of a mode with eigenvalue `lambda` (1/s²) and damping `c` (1/s)
    /// over a step `h` (s).
    pub fn new(lambda: f64, c: f64, h: f64) -> Self {
        let m = Matrix3::new(0.0, h, 0.0, -lambda * h, -c * h, h, 0.0, 0.0, 0.0);
        let e = m.exp();
        Self {
            phi: [[e[(0, 0)], e[(0, 1)]], [e[(1, 0)], e[(1, 1)]]],
            gamma: [e[(0, 2)], e[(1, 2)]],
        }
    }

    /// Applies the step to (z, ż) with modal force `g` held over it.
    #[inline]
    pub fn apply(&self, z: f64, zd: f64, g: f64) -> (f64, f64) {
        (
            self.phi[0][0] * z + self.phi[0][1] * zd + self.gamma[0] * g,
            self.phi[1][0] * z + self.phi[1][1] * zd + self.gamma[1] * g,
        )
    }
}

/// The modal state z, ż of k modes, with transitions precomputed for a fixed step.
#[derive(Clone, Debug)]
pub struct Oscillators {
    lambda: Vec<f64>,
    damping: Vec<f64>,
    dt: f64,
    fixed: Vec<ModeTransition>,
    z: Vec<f64>,
    zd: Vec<f64>,
}

impl Oscillators {
    /// Modes with eigenvalues `lambda` (1/s², ≥ 0 up to round-off), Rayleigh damping
    /// c = `alpha1`·λ + `alpha2` (α₁ in s, α₂ in 1/s), at rest, with transitions
    /// precomputed for the step `dt` (s).
    pub fn new(lambda: &[f64], alpha1: f64, alpha2: f64, dt: f64) -> Self {
        let damping: Vec<f64> = lambda.iter().map(|&l| alpha1 * l + alpha2).collect();
        let fixed = lambda
            .iter()
            .zip(&damping)
            .map(|(&l, &c)| ModeTransition::new(l, c, dt))
            .collect();
        Self {
            lambda: lambda.to_vec(),
            damping,
            dt,
            fixed,
            z: vec![0.0; lambda.len()],
            zd: vec![0.0; lambda.len()],
        }
    }

    /// Number of modes.
    pub fn len(&self) -> usize {
        self.lambda.len()
    }

    /// Whether there are no modes.
    pub fn is_empty(&self) -> bool {
        self.lambda.is_empty()
    }

    /// The fixed step the transitions were precomputed for (s).
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// Eigenvalues λ (1/s²).
    pub fn lambda(&self) -> &[f64] {
        &self.lambda
    }

    /// Damping coefficients c = α₁λ + α₂ (1/s).
    pub fn damping(&self) -> &[f64] {
        &self.damping
    }

    /// Modal displacements z (m·√kg, mass-normalised coordinates).
    pub fn z(&self) -> &[f64] {
        &self.z
    }

    /// Modal velocities ż.
    pub fn zd(&self) -> &[f64] {
        &self.zd
    }

    /// Sets the modal state (e.g. initial conditions W̄ᵀM d₀, W̄ᵀM ḋ₀).
    pub fn set_state(&mut self, z: &[f64], zd: &[f64]) {
        self.z.copy_from_slice(z);
        self.zd.copy_from_slice(zd);
    }

    /// Advances every mode by the fixed step with modal forces `g` (= W̄ᵀ f) held over
    /// it. Allocation-free.
    pub fn step(&mut self, g: &[f64]) {
        for (i, &gi) in g.iter().enumerate().take(self.lambda.len()) {
            (self.z[i], self.zd[i]) = self.fixed[i].apply(self.z[i], self.zd[i], gi);
        }
    }

    /// Advances every mode by an arbitrary step `h` (s), computing the transitions on
    /// the fly (one 3×3 exponential per mode). Allocation-free.
    pub fn step_by(&mut self, h: f64, g: &[f64]) {
        for (i, &gi) in g.iter().enumerate().take(self.lambda.len()) {
            let tr = ModeTransition::new(self.lambda[i], self.damping[i], h);
            (self.z[i], self.zd[i]) = tr.apply(self.z[i], self.zd[i], gi);
        }
    }

    /// Writes the transitions for a step `h` (s) into `out` (one per mode): the
    /// precomputed ones when `h` is the fixed step, fresh exponentials otherwise.
    pub fn transitions(&self, h: f64, out: &mut [ModeTransition]) {
        if h == self.dt {
            out.copy_from_slice(&self.fixed);
        } else {
            for (i, tr) in out.iter_mut().enumerate() {
                *tr = ModeTransition::new(self.lambda[i], self.damping[i], h);
            }
        }
    }

    /// Advances every mode with the given transitions (from [`Self::transitions`])
    /// and modal forces `g` held over the step.
    pub fn step_with(&mut self, transitions: &[ModeTransition], g: &[f64]) {
        for (i, tr) in transitions.iter().enumerate() {
            (self.z[i], self.zd[i]) = tr.apply(self.z[i], self.zd[i], g[i]);
        }
    }

    /// Mechanical energy ½ Σ (ż² + λ z²) (J, for mass-normalised modes).
    pub fn energy(&self) -> f64 {
        self.z
            .iter()
            .zip(&self.zd)
            .zip(&self.lambda)
            .map(|((z, zd), l)| 0.5 * (zd * zd + l * z * z))
            .sum()
    }
}
