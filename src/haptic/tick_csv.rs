//! The per-tick CSV of a session, the same for `palpa replay`'s output and the
//! `ticks.csv` of `palpa serve --record`: `t,x,y,z,fx,fy,fz,depth,contact`, one row per
//! haptic tick, floats in Rust's shortest round-trip form (read back bit for bit).

use std::io::Write;

use crate::haptic::{SafetyState, TickRecord};
use crate::Vec3;

/// Header of the per-tick CSV (trajectory files accept it too).
pub const HEADER: &str = crate::device::replay::TICKS_HEADER;
/// Header of a recorded session's `ticks.csv`: [`HEADER`], each tick's safety state
/// ([`SafetyState::name`]: why the force is not the tissue's, when it is not), the
/// buttons, the gripper's opening (rad) and the stylus's orientation (`qx,qy,qz,qw`,
/// scene frame); the last two empty for devices without them.
pub const SESSION_HEADER: &str = crate::device::replay::SESSION_TICKS_HEADER;

/// One haptic tick as the CSV has it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TickRow {
    /// Loop time (s): virtual in a replay, since the haptic thread started in `serve`.
    pub t: f64,
    /// Probe tip (m, scene frame).
    pub probe: Vec3,
    /// Force commanded to the device, on the user's hand, after every safety limit
    /// (N, scene frame).
    pub force: Vec3,
    /// Indentation (m) below the undeformed surface at the contact.
    pub depth: f64,
    /// Whether the model in use reported contact.
    pub contact: bool,
    /// Button mask.
    pub buttons: u32,
    /// The gripper's opening (rad), for devices with a gripper.
    pub gripper: Option<f64>,
    /// The stylus's orientation `(x, y, z, w)` (scene frame), for devices that sense it.
    pub orientation: Option<[f64; 4]>,
}

impl TickRow {
    /// The row of one haptic tick's record.
    pub fn of(r: &TickRecord) -> Self {
        Self {
            t: r.t,
            probe: r.probe,
            force: r.force,
            depth: r.depth,
            contact: r.model_in_contact,
            buttons: r.buttons,
            gripper: r.gripper,
            orientation: r.orientation.map(|q| {
                let c = q.coords;
                [c.x, c.y, c.z, c.w]
            }),
        }
    }

    /// Writes the row as one CSV line.
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        self.write_fields(w)?;
        writeln!(w)
    }

    /// Writes the row, the tick's safety state and the stylus (buttons, gripper,
    /// orientation) as one line of [`SESSION_HEADER`].
    pub fn write_with_safety(
        &self,
        w: &mut impl Write,
        safety: SafetyState,
    ) -> std::io::Result<()> {
        self.write_fields(w)?;
        write!(w, ",{},{},", safety.name(), self.buttons)?;
        if let Some(g) = self.gripper {
            write!(w, "{g}")?;
        }
        match self.orientation {
            Some([x, y, z, q]) => writeln!(w, ",{x},{y},{z},{q}"),
            None => writeln!(w, ",,,,"),
        }
    }

    fn write_fields(&self, w: &mut impl Write) -> std::io::Result<()> {
        write!(
            w,
            "{},{},{},{},{},{},{},{},{}",
            self.t,
            self.probe.x,
            self.probe.y,
            self.probe.z,
            self.force.x,
            self.force.y,
            self.force.z,
            self.depth,
            u8::from(self.contact)
        )
    }
}

/// Writes rows as CSV with [`HEADER`].
pub fn write_csv(rows: &[TickRow], w: &mut impl Write) -> std::io::Result<()> {
    writeln!(w, "{HEADER}")?;
    rows.iter().try_for_each(|r| r.write(w))
}
