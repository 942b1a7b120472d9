//! Growing the reduced model where it falls short: a state's correction (the residual
//! on the whole mesh, `correction.rs`) joins the basis as a shape and renews the active
//! terms; and what the forces are summed over (every active term, or a cubature).

use super::model::ReducedStatics;
use super::newton::size;
use crate::nonlinear::correction::Correction;
use crate::nonlinear::quadrature::{Active, Cubature, Quadrature, TaylorOffset};
use crate::nonlinear::{LinearConstraint, NewtonOptions, NewtonReport, NonlinearError};
use crate::Vec3;

/// How far a reduced state is from the full model's (energy norms relative to the
/// displacement's, ‖·‖_K / ‖u‖_K; dimensionless).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// What the basis misses of the reduced model's own equilibrium.
    pub basis: f64,
    /// What the linearised (inactive) terms leave out.
    pub cut: f64,
}

impl ReducedStatics {
    /// Sums the reduced forces over the cubature's terms with its weights instead of
    /// over the active ones, until the next [`ReducedStatics::enrich`].
    pub fn set_cubature(&mut self, cubature: &Cubature) {
        self.quadrature =
            Quadrature::of_cubature(cubature, &self.statics.tets, self.statics.volume.as_ref());
        self.revision += 1;
    }

    /// `cubature` with its [`TaylorOffset`] at q (over the whole basis): the full
    /// sum's reduced forces `forces` (N) and tangent `tangent` (N/m, row-major r × r)
    /// there, as [`ReducedStatics::forces_and_tangent_at`] gives them, less the
    /// cubature's.
    pub(in crate::nonlinear) fn cubature_at(
        &self,
        cubature: &Cubature,
        q: &[f64],
        forces: &[f64],
        tangent: &[f64],
    ) -> Quadrature {
        let mut quadrature =
            Quadrature::of_cubature(cubature, &self.statics.tets, self.statics.volume.as_ref());
        let r = self.shapes;
        let mut work = super::forces::Work::new(r, self.nodes());
        let (mut own_forces, mut own_tangent) = (vec![0.0; r], vec![0.0; r * r]);
        self.accumulate(
            q,
            &quadrature,
            &mut work,
            &mut own_forces,
            Some(&mut own_tangent),
            None,
        );
        quadrature.offset = Some(TaylorOffset {
            at: q[..r].to_vec(),
            forces: (0..r).map(|j| forces[j] - own_forces[j]).collect(),
            tangent: (0..r * r).map(|i| tangent[i] - own_tangent[i]).collect(),
        });
        quadrature
    }

    /// Estimates the reduced state `q`'s error under `loads` and `constraints` (their
    /// multipliers as solved) and grows the model where it falls short:
    /// * the basis: r, the residual of the reduced model's own laws (active terms
    ///   large-strain, the rest linearised) on the whole mesh, gives the estimate
    ///   √(rᵀK⁻¹r) / |q| (the energy norm of the correction K⁻¹r relative to the
    ///   displacement's; 0 at rest); above `tolerance` K⁻¹r joins the basis (append a 0
    ///   to q);
    /// * the cut: the terms whose large-strain stress differs from their linearised one
    ///   by more than [`crate::nonlinear::ACTIVE_NONLINEARITY`] of their shear modulus at
    ///   q become the active ones, and the same norm of what the inactive ones'
    ///   difference adds to r is reported.
    pub fn enrich(
        &mut self,
        q: &[f64],
        loads: &[Vec3],
        constraints: &[LinearConstraint],
        tolerance: f64,
    ) -> Result<Estimate, NonlinearError> {
        let correction = self.correction(q, loads, constraints)?;
        self.join_correction(&correction, tolerance)
    }

    /// The correction of the state `q` under `loads` and `constraints`
    /// ([`ReducedStatics::enrich`]), without changing the model.
    pub(in crate::nonlinear) fn correction(
        &self,
        q: &[f64],
        loads: &[Vec3],
        constraints: &[LinearConstraint],
    ) -> Result<Correction, NonlinearError> {
        let mut u = vec![Vec3::zeros(); self.nodes()];
        self.displacement(q, &mut u);
        self.corrector()
            .correct(&u, loads, constraints, &self.active, size(q))
    }

    /// Sums the forces over every active term again if they were summed over a
    /// cubature with its offset, until the next correction joins.
    pub(in crate::nonlinear) fn forget_cubature(&mut self) {
        if self.summed_over_cubature() {
            self.quadrature = self.full_quadrature();
            self.revision += 1;
        }
    }

    /// Every active term with weight 1.
    fn full_quadrature(&self) -> Quadrature {
        Quadrature::full(
            &self.active,
            &self.statics.tets,
            self.statics.volume.as_ref(),
        )
    }

    /// Sums the reduced forces over `active` (weight 1) from now on.
    pub(in crate::nonlinear) fn set_active(&mut self, active: &Active) {
        if *active != self.active {
            self.active = active.clone();
            self.quadrature = self.full_quadrature();
            self.revision += 1;
        }
    }

    /// Joins a correction as a mirror of this basis joined it: `active` become the
    /// active terms, summed over `quadrature` (`None`: all of them, weight 1), and
    /// `shapes` (U's and KU's columns) are appended. Fails when the basis is full.
    pub(in crate::nonlinear) fn join_mirrored(
        &mut self,
        active: &Active,
        shapes: Vec<(Vec<f64>, Vec<f64>)>,
        quadrature: Option<Quadrature>,
    ) -> Result<(), NonlinearError> {
        if self.shapes + shapes.len() > self.capacity {
            return Err(NonlinearError::BasisFull(self.capacity));
        }
        if *active != self.active {
            self.active = active.clone();
        }
        self.quadrature = quadrature.unwrap_or_else(|| self.full_quadrature());
        self.revision += 1;
        for shape in shapes {
            self.append_shape(shape)?;
        }
        Ok(())
    }

    /// Joins `correction` to the model ([`ReducedStatics::enrich`]): its strained terms
    /// become the active ones, and its shapes join the basis, K-orthonormalised against
    /// it, each if what is new of it is above `tolerance` of the state's |q|: first the
    /// applied forces' own shape K⁻¹f (what the contact's residual flexibility carries
    /// linearly, `tissue/residual.rs`), then the correction K⁻¹r. The basis may have grown
    /// since the correction's state: the shapes are still directions its state missed.
    /// Returns the estimate (the larger of the two). On [`NonlinearError::BasisFull`]
    /// the active terms have changed already.
    pub(in crate::nonlinear) fn join_correction(
        &mut self,
        correction: &Correction,
        tolerance: f64,
    ) -> Result<Estimate, NonlinearError> {
        if correction.residual.len() != self.statics.prescribed.len() {
            return Err(NonlinearError::NodeCount {
                what: "correction (3 per node)",
                given: correction.residual.len(),
                nodes: self.nodes(),
            });
        }
        let quadrature = Quadrature::full(
            &correction.active,
            &self.statics.tets,
            self.statics.volume.as_ref(),
        );
        if !quadrature.same_terms(&self.quadrature) || self.summed_over_cubature() {
            self.revision += 1;
        }
        self.quadrature = quadrature;
        self.active.clone_from(&correction.active);
        let size = correction.size;
        let (applied, solved) = &correction.applied;
        let (_, contact) = if applied.is_empty() {
            (0.0, 0.0)
        } else {
            self.add_solved_if(applied, solved.clone(), tolerance * size)?
        };
        let (_, left) = self.add_solved_if(
            &correction.residual,
            correction.solved.clone(),
            tolerance * size,
        )?;
        let basis = if size > 0.0 {
            left.max(contact) / size
        } else {
            0.0
        };
        Ok(Estimate {
            basis,
            cut: correction.cut,
        })
    }

    /// Solves to the full model's accuracy: [`ReducedStatics::solve`], then
    /// [`ReducedStatics::enrich`] and again until the basis estimate is at most
    /// `tolerance` and the cut stays as it is (or the basis is full). Returns the last
    /// solve's report and estimate.
    pub fn solve_adaptive(
        &mut self,
        q: &mut Vec<f64>,
        loads: &[Vec3],
        constraints: &mut [LinearConstraint],
        options: &NewtonOptions,
        tolerance: f64,
    ) -> Result<(NewtonReport, Estimate), NonlinearError> {
        // Each round adds a shape or changes the cut; a cut that keeps changing (an
        // element on the threshold) stops after as many rounds as the basis has room.
        for round in 1.. {
            q.resize(self.shapes, 0.0);
            let report = self.solve(q, loads, constraints, options)?;
            let active = self.active.clone();
            let estimate = self.enrich(q, loads, constraints, tolerance)?;
            let settled = estimate.basis <= tolerance && self.active == active;
            if settled || self.shapes == self.capacity || round >= self.capacity {
                return Ok((report, estimate));
            }
        }
        unreachable!("the rounds return")
    }
}
