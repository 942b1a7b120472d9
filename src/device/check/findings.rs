//! What each step of `palpa devices check` found, and the words (and profile lines) it
//! tells the user. Findings are plain values the check's 1 kHz loop records without
//! allocating; the text is made once the loop has ended.

use super::plan::{Plan, Step, MAX_CHECK_FORCE};
use crate::device::profile::{Endian, Field, FieldType};
use crate::Vec3;

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Finding {
    /// Samples arrive (how many in the settle time).
    Samples {
        /// New samples seen.
        count: u64,
    },
    /// No new sample arrived: nothing else can be judged.
    NoSamples,
    /// At the calibration pose the decoded tip was `error` m from the pose's; `fixed`
    /// when palpa (re)calibrated it there.
    Calibration {
        /// Distance before (m).
        error: f64,
        /// Whether palpa calibrated the counters at the pose.
        fixed: bool,
    },
    /// The board did not take its calibration command: the tip stays `error` m off.
    CalibrationIgnored {
        /// Distance after (m).
        error: f64,
    },
    /// Absolute counts that do not put the tip at the calibration pose.
    CalibrationOff {
        /// Distance (m).
        error: f64,
    },
    /// A move went the asked way (`cosine` between asked and seen).
    Moved {
        /// The step.
        step: Step,
        /// Cosine.
        cosine: f64,
    },
    /// A move went another way; `encoder` names the joint whose encoder, counted the
    /// other way, explains it.
    MovedWrongWay {
        /// The step.
        step: Step,
        /// The direction seen (device frame, unit).
        seen: Vec3,
        /// The joint whose reversed encoder explains it, if one does.
        encoder: Option<usize>,
    },
    /// No motion within the time allowed.
    NoMotion {
        /// The step.
        step: Step,
    },
    /// The reach along `axis` covered `coverage` of the profile's box.
    Workspace {
        /// Device axis.
        axis: usize,
        /// Reached extent (m, min and max).
        reached: (f64, f64),
        /// The box (m, min and max).
        box_range: (f64, f64),
        /// Share covered.
        coverage: f64,
    },
    /// The user did not confirm in time.
    NoAnswer {
        /// The step.
        step: Step,
    },
    /// A push moved the handle `along` m its way (of `total` m).
    Pushed {
        /// The step.
        step: Step,
        /// Motion along the push (m; joint pushes: rad of the joint).
        along: f64,
        /// Motion in all (m; joint pushes: rad).
        total: f64,
    },
    /// A push moved the handle against itself: the device pushes the other way.
    PushedBackwards {
        /// The step.
        step: Step,
        /// Motion along the push (m or rad, negative).
        along: f64,
    },
    /// A push moved the handle too little to judge.
    PushTooSmall {
        /// The step.
        step: Step,
        /// Motion in all (m or rad).
        total: f64,
    },
    /// Aborted: the handle ran away during a push; the force was zeroed in that tick.
    Aborted {
        /// The step.
        step: Step,
        /// Displacement from where the push began (m).
        displacement: f64,
        /// Speed (m/s).
        speed: f64,
    },
    /// Aborted: the device failed or stopped reporting during a push.
    DeviceLost {
        /// The step.
        step: Step,
    },
    /// Forces were not tried because positions are not right.
    ForcesSkipped,
    /// Stopped before every step ran (Ctrl-C, or the time allowed ran out).
    Interrupted,
}

impl Finding {
    /// Whether this finding fails the check.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            Finding::NoSamples
                | Finding::CalibrationIgnored { .. }
                | Finding::CalibrationOff { .. }
                | Finding::MovedWrongWay { .. }
                | Finding::NoMotion { .. }
                | Finding::NoAnswer { .. }
                | Finding::PushedBackwards { .. }
                | Finding::PushTooSmall { .. }
                | Finding::Aborted { .. }
                | Finding::DeviceLost { .. }
                | Finding::ForcesSkipped
                | Finding::Interrupted
        ) || matches!(self, Finding::Workspace { coverage, .. } if *coverage < super::plan::WORKSPACE_COVERAGE)
    }
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// What every step found, in order.
    pub findings: Vec<Finding>,
    /// Largest force commanded (N).
    pub max_force: f64,
}

impl Outcome {
    /// Whether every step passed.
    pub fn passed(&self) -> bool {
        !self.findings.iter().any(Finding::fails)
    }

    /// The joints whose motors push the other way (joint pushes backwards both ways).
    pub fn reversed_motors(&self) -> Vec<usize> {
        (0..3)
            .filter(|&j| {
                let backwards = self.findings.iter().filter(|f| {
                    matches!(f, Finding::PushedBackwards { step: Step::PushJoint { joint, .. }, .. } if *joint == j)
                });
                backwards.count() == 2
            })
            .collect()
    }

    /// The report for the terminal: one line per finding, then the fixes.
    pub fn report(&self, plan: &Plan) -> String {
        let mut lines: Vec<String> = self.findings.iter().map(line).collect();
        lines.push(format!(
            "largest force commanded: {:.3} N (the check never commands more than {MAX_CHECK_FORCE} N)",
            self.max_force
        ));
        lines.extend(self.fixes(plan));
        lines.push(if self.passed() {
            "result: PASSED".to_owned()
        } else {
            "result: FAILED (the force was zero when the check ended)".to_owned()
        });
        lines.join("\n")
    }

    /// The profile lines that fix what the check found.
    fn fixes(&self, plan: &Plan) -> Vec<String> {
        let source = plan
            .profile_source
            .clone()
            .unwrap_or_else(|| "the profile".into());
        let mut fixes = Vec::new();
        let Some(arm) = &plan.arm else {
            return fixes;
        };
        for joint in self.reversed_motors() {
            if let Some(field) = arm.currents.map(|c| fields(&c)[joint]) {
                fixes.push(fix_line(&source, "output.currents", joint, &field, "motor"));
            }
        }
        let mut encoders: Vec<usize> = self
            .findings
            .iter()
            .filter_map(|f| match f {
                Finding::MovedWrongWay { encoder, .. } => *encoder,
                _ => None,
            })
            .collect();
        encoders.sort_unstable();
        encoders.dedup();
        for joint in encoders {
            if let Some(field) = arm.joints.map(|j| fields(&j)[joint]) {
                fixes.push(fix_line(&source, "input.joints", joint, &field, "encoder"));
            }
        }
        fixes
    }
}

fn fields(j: &crate::device::profile::Joints) -> [Field; 3] {
    [j.a, j.b, j.c]
}

/// `fix: joint b's motor turns the other way: in PROFILE, [output.currents] set
/// b = { offset = 3, type = "i16", scale = -0.001 }`.
fn fix_line(source: &str, table: &str, joint: usize, field: &Field, what: &str) -> String {
    let name = JOINTS[joint];
    let mut flipped = format!(
        "{name} = {{ offset = {}, type = \"{}\", scale = {:?}",
        field.offset,
        type_name(field.ty),
        -field.scale
    );
    if field.endian == Endian::Big {
        flipped.push_str(", endian = \"big\"");
    }
    flipped.push_str(" }");
    format!(
        "fix: joint {name}'s {what} is wired the other way: in {source}, under [{table}], \
         write `{flipped}` (a shipped profile: copy it, change that line, and pass the copy \
         with --device hid:FILE)"
    )
}

const JOINTS: [&str; 3] = ["a", "b", "c"];

fn type_name(t: FieldType) -> &'static str {
    match t {
        FieldType::U8 => "u8",
        FieldType::I8 => "i8",
        FieldType::U16 => "u16",
        FieldType::I16 => "i16",
        FieldType::U32 => "u32",
        FieldType::I32 => "i32",
        FieldType::F32 => "f32",
    }
}

/// The step, in words.
pub fn step_name(step: Step) -> String {
    let axis = |a: usize, p: bool| format!("{}{}", if p { "+" } else { "−" }, ["x", "y", "z"][a]);
    match step {
        Step::Settle => "samples".into(),
        Step::Calibrate => "calibration pose".into(),
        Step::Move { axis: a, positive } => format!("move {}", axis(a, positive)),
        Step::Workspace => "workspace".into(),
        Step::Hold => "holding for the pushes".into(),
        Step::PushAxis { axis: a, positive } => format!("push {}", axis(a, positive)),
        Step::PushJoint { joint, positive } => format!(
            "push joint {} {}",
            JOINTS[joint],
            if positive { "+" } else { "−" }
        ),
    }
}

fn mm(m: f64) -> String {
    format!("{:.1} mm", m * 1e3)
}

/// The line for one finding: `ok`, `FAIL` or `ABORT`, the step, and the numbers.
fn line(f: &Finding) -> String {
    let mark = if f.fails() { "FAIL" } else { "ok  " };
    let text = match *f {
        Finding::Samples { count } => format!("samples: {count} new samples at zero force"),
        Finding::NoSamples => "samples: none arrived: is the device sending?".into(),
        Finding::Calibration { error, fixed: true } => format!(
            "calibration pose: the counters were {} off; palpa calibrated them at this pose",
            mm(error)
        ),
        Finding::Calibration {
            error,
            fixed: false,
        } => {
            format!("calibration pose: the tip is {} from the pose's", mm(error))
        }
        Finding::CalibrationIgnored { error } => format!(
            "calibration pose: the board did not take its calibration command; the tip is {} \
             from the pose's (check [output.calibration] and the firmware)",
            mm(error)
        ),
        Finding::CalibrationOff { error } => format!(
            "calibration pose: the tip is {} from the pose's: check \
             kinematics.calibration_counts and kinematics.calibration",
            mm(error)
        ),
        Finding::Moved { step, cosine } => {
            format!(
                "{}: the position moved the right way (cos {cosine:.2})",
                step_name(step)
            )
        }
        Finding::MovedWrongWay {
            step,
            seen,
            encoder,
        } => format!(
            "{}: palpa saw the handle move towards ({:.2}, {:.2}, {:.2}){}",
            step_name(step),
            seen.x,
            seen.y,
            seen.z,
            encoder.map_or(String::from(": check [axes]"), |j| format!(
                ": joint {}'s encoder counts the other way",
                JOINTS[j]
            ))
        ),
        Finding::NoMotion { step } => format!("{}: no motion seen", step_name(step)),
        Finding::Workspace {
            axis,
            reached,
            box_range,
            coverage,
        } => format!(
            "workspace {}: reached {} to {}, the profile's box {} to {} ({:.0} % covered)",
            ["x", "y", "z"][axis],
            mm(reached.0),
            mm(reached.1),
            mm(box_range.0),
            mm(box_range.1),
            coverage * 100.0
        ),
        Finding::NoAnswer { step } => format!("{}: no Enter in time", step_name(step)),
        Finding::Pushed { step, along, total } => match step {
            Step::PushJoint { .. } => format!(
                "{}: the joint turned its way by {:.2} mrad",
                step_name(step),
                along * 1e3
            ),
            _ => format!(
                "{}: the handle moved {} its way ({} in all)",
                step_name(step),
                mm(along),
                mm(total)
            ),
        },
        Finding::PushedBackwards { step, along } => match step {
            Step::PushJoint { .. } => format!(
                "{}: the joint turned against the push ({:.2} mrad)",
                step_name(step),
                along * 1e3
            ),
            _ => format!(
                "{}: the handle moved against the push ({})",
                step_name(step),
                mm(along)
            ),
        },
        Finding::PushTooSmall { step, total } => format!(
            "{}: moved too little to judge ({:.3}): hold the handle more lightly",
            step_name(step),
            total * 1e3
        ),
        Finding::Aborted {
            step,
            displacement,
            speed,
        } => {
            return format!(
                "ABORT {}: the handle ran away ({} from where the push began, {:.2} m/s); the \
                 force was zeroed at once",
                step_name(step),
                mm(displacement),
                speed
            )
        }
        Finding::DeviceLost { step } => {
            return format!(
                "ABORT {}: the device stopped answering; the force is zero",
                step_name(step)
            )
        }
        Finding::ForcesSkipped => {
            "forces: not tried, because the positions are not right yet".into()
        }
        Finding::Interrupted => "stopped before every step ran".into(),
    };
    format!("{mark} {text}")
}
