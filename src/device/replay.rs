//! Trajectory files (CSV `t,x,y,z,buttons` in s and m, optional `fx,fy,fz` in N, or a
//! session's per-tick CSV `t,x,y,z,fx,fy,fz,depth,contact[,safety[,buttons,gripper,qx,qy,qz,qw]]`; blank lines and lines
//! starting with `#` are skipped) and the `replay` device that plays one back. Times run from 0 to at most [`MAX_TRAJECTORY_TIME`].

use super::{DeviceError, DeviceRating, DeviceSample, HapticDevice};
use crate::Vec3;
use std::io::Write;
use std::path::Path;

/// Header of a trajectory without forces.
pub const HEADER: &str = "t,x,y,z,buttons";
/// Header of a trajectory with forces.
pub const HEADER_WITH_FORCE: &str = "t,x,y,z,buttons,fx,fy,fz";
/// Header of a per-tick session CSV (`palpa replay`'s output, a recorded session's
/// `ticks.csv`), which reads as a trajectory with forces and no buttons: t (s), probe
/// x,y,z (m), force fx,fy,fz (N), depth (m), contact (0/1).
pub const TICKS_HEADER: &str = "t,x,y,z,fx,fy,fz,depth,contact";
/// Header of a recorded session's `ticks.csv`: [`TICKS_HEADER`], the safety state of
/// each tick (a name: `normal`, `ramping`, …), the device's buttons (bit mask), the
/// gripper's opening (rad) and the stylus's orientation (a unit quaternion, scene frame;
/// gripper and orientation empty for devices without them); also read as a trajectory.
pub const SESSION_TICKS_HEADER: &str =
    "t,x,y,z,fx,fy,fz,depth,contact,safety,buttons,gripper,qx,qy,qz,qw";
/// The header recordings had before the buttons, gripper and orientation, still read.
pub const SESSION_TICKS_HEADER_V1: &str = "t,x,y,z,fx,fy,fz,depth,contact,safety";

/// Which column of a trajectory file holds what (the others are checked as numbers:
/// a session CSV's depth and contact; its safety state is a name, not checked).
struct Columns {
    count: usize,
    buttons: Option<usize>,
    force: Option<usize>,
    name: Option<usize>,
    /// Columns from here on may be empty (a device without a gripper or orientation).
    optional_from: usize,
}

impl Columns {
    fn of(header: &str) -> Option<Self> {
        Some(match header {
            HEADER => Self {
                count: 5,
                buttons: Some(4),
                force: None,
                name: None,
                optional_from: 5,
            },
            HEADER_WITH_FORCE => Self {
                count: 8,
                buttons: Some(4),
                force: Some(5),
                name: None,
                optional_from: 8,
            },
            TICKS_HEADER => Self {
                count: 9,
                buttons: None,
                force: Some(4),
                name: None,
                optional_from: 9,
            },
            SESSION_TICKS_HEADER_V1 => Self {
                count: 10,
                buttons: None,
                force: Some(4),
                name: Some(9),
                optional_from: 10,
            },
            SESSION_TICKS_HEADER => Self {
                count: 16,
                buttons: Some(10),
                force: Some(4),
                name: Some(9),
                optional_from: 11,
            },
            _ => return None,
        })
    }
}

/// One row of a trajectory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrajectorySample {
    /// Time (s).
    pub t: f64,
    /// Probe position (m).
    pub position: Vec3,
    /// Button mask.
    pub buttons: u32,
    /// Force commanded at that time (N), if recorded.
    pub force: Option<Vec3>,
}

/// A probe trajectory: samples with strictly increasing time in
/// [0, [`MAX_TRAJECTORY_TIME`]] s.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    samples: Vec<TrajectorySample>,
}

/// A trajectory file that cannot be read, naming the file and line (`FILE:LINE: …`, or
/// `FILE: …` for the file as a whole).
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", if *line > 0 { format!(":{line}") } else { String::new() })]
pub struct TrajectoryError {
    /// File (or source) name.
    pub file: String,
    /// 1-based line number (0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Latest sample time a trajectory may have (s): one hour. Playback sizes its work from the
/// last time (`palpa replay` keeps one row per 1 ms tick: 3.6 million rows, about 260 MB,
/// for an hour), so the bound keeps a time typed by mistake (e.g. `1e300`) from exploding.
pub const MAX_TRAJECTORY_TIME: f64 = 3600.0;

/// Why `sample` cannot follow `previous`, if it cannot: every value finite, time within
/// [0, [`MAX_TRAJECTORY_TIME`]] and after the previous sample's.
fn sample_problem(
    previous: Option<&TrajectorySample>,
    sample: &TrajectorySample,
) -> Option<String> {
    let finite = sample.t.is_finite()
        && sample.position.iter().all(|c| c.is_finite())
        && sample.force.is_none_or(|f| f.iter().all(|c| c.is_finite()));
    if !finite {
        return Some("non-finite value".into());
    }
    if !(0.0..=MAX_TRAJECTORY_TIME).contains(&sample.t) {
        let t = if sample.t.abs() < 1e9 {
            sample.t.to_string()
        } else {
            format!("{:e}", sample.t)
        };
        return Some(format!(
            "t: {t} s is outside 0..={MAX_TRAJECTORY_TIME} s (a trajectory starts at 0 and \
             lasts at most an hour)"
        ));
    }
    match previous {
        Some(p) if sample.t <= p.t => Some(format!(
            "time {} is not after the previous sample's {} (s)",
            sample.t, p.t
        )),
        _ => None,
    }
}

impl Trajectory {
    /// A trajectory from samples: at least one, every value finite, times strictly
    /// increasing within [0, [`MAX_TRAJECTORY_TIME`]] s. `source` names it in errors,
    /// which name the sample (0-based).
    pub fn new(samples: Vec<TrajectorySample>, source: &str) -> Result<Self, TrajectoryError> {
        let err = |message: String| TrajectoryError {
            file: source.to_string(),
            line: 0,
            message,
        };
        if samples.is_empty() {
            return Err(err("no samples".into()));
        }
        for (i, s) in samples.iter().enumerate() {
            let previous = i.checked_sub(1).map(|p| &samples[p]);
            if let Some(problem) = sample_problem(previous, s) {
                return Err(err(format!("sample {i}: {problem}")));
            }
        }
        Ok(Self { samples })
    }

    /// Parses CSV text; `source` (the file name) appears in errors with the line, counted
    /// in the file (blank lines and `#` comment lines, which are skipped, count too). A
    /// torn last row is dropped ([`Trajectory::parse_noting`]) with a warning in the log.
    pub fn parse(text: &str, source: &str) -> Result<Self, TrajectoryError> {
        let (t, note) = Self::parse_noting(text, source)?;
        if let Some(note) = note {
            tracing::warn!("{note}");
        }
        Ok(t)
    }

    /// [`Trajectory::parse`], and the note about a torn last row if one was dropped. A
    /// last line without its end of line is a row cut short by a crash or a full disk
    /// when palpa wrote the file (a session's header, or a `# palpa` comment first), or
    /// when it does not parse; it is dropped, never read as a shorter number.
    pub fn parse_noting(
        text: &str,
        source: &str,
    ) -> Result<(Self, Option<String>), TrajectoryError> {
        let Some(cut) = text.rfind('\n').map(|i| i + 1).filter(|&i| i < text.len()) else {
            return Ok((Self::parse_rows(text, source)?, None));
        };
        let (whole, torn) = text.split_at(cut);
        let note = || {
            Some(format!(
                "{source}: the last line ({} bytes, no end of line) is a row cut short, as a \
                 recording stopped by a crash or a full disk leaves it; ignored",
                torn.len()
            ))
        };
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        let palpa_written = first.is_some_and(|l| {
            l.starts_with("# palpa") || l.replace(' ', "") == SESSION_TICKS_HEADER
        });
        if palpa_written || torn.trim().is_empty() {
            let note = if torn.trim().is_empty() { None } else { note() };
            return Ok((Self::parse_rows(whole, source)?, note));
        }
        match Self::parse_rows(text, source) {
            Ok(t) => Ok((t, None)),
            Err(e) if e.line == whole.lines().count() + 1 => {
                Ok((Self::parse_rows(whole, source)?, note()))
            }
            Err(e) => Err(e),
        }
    }

    fn parse_rows(text: &str, source: &str) -> Result<Self, TrajectoryError> {
        let err = |line: usize, message: String| TrajectoryError {
            file: source.to_string(),
            line,
            message,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let (header_line, header) = lines
            .next()
            .map(|(n, l)| (n, l.replace(' ', "")))
            .ok_or_else(|| err(1, "empty file".into()))?;
        let columns = Columns::of(&header).ok_or_else(|| {
            err(
                header_line,
                format!(
                    "header `{header}`, expected `{HEADER}`, `{HEADER_WITH_FORCE}`, \
                     `{TICKS_HEADER}`, `{SESSION_TICKS_HEADER}` or `{SESSION_TICKS_HEADER_V1}`"
                ),
            )
        })?;
        let names: Vec<&str> = header.split(',').collect();
        let mut samples: Vec<TrajectorySample> = Vec::new();
        for (line_no, line) in lines {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() != columns.count {
                return Err(err(
                    line_no,
                    format!("{} fields, expected {}", fields.len(), columns.count),
                ));
            }
            // Numbers left to right, then the button mask: the first bad field is named.
            let mut v = [0.0; 16];
            for (j, f) in fields.iter().enumerate() {
                if Some(j) == columns.buttons
                    || Some(j) == columns.name
                    || (j >= columns.optional_from && f.is_empty())
                {
                    continue;
                }
                v[j] = f
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| {
                        err(
                            line_no,
                            format!("{}: `{f}` is not a finite number", names[j]),
                        )
                    })?;
            }
            let buttons = match columns.buttons {
                Some(j) => fields[j].parse::<u32>().map_err(|_| {
                    err(
                        line_no,
                        format!("buttons: `{}` is not a bit mask", fields[j]),
                    )
                })?,
                None => 0,
            };
            let sample = TrajectorySample {
                t: v[0],
                position: Vec3::new(v[1], v[2], v[3]),
                buttons,
                force: columns.force.map(|j| Vec3::new(v[j], v[j + 1], v[j + 2])),
            };
            if let Some(problem) = sample_problem(samples.last(), &sample) {
                return Err(err(line_no, problem));
            }
            samples.push(sample);
        }
        if samples.is_empty() {
            return Err(err(header_line, "header but no samples".into()));
        }
        Ok(Self { samples })
    }

    /// Reads a trajectory file.
    pub fn load(path: &Path) -> Result<Self, TrajectoryError> {
        let (t, note) = Self::load_noting(path)?;
        if let Some(note) = note {
            tracing::warn!("{note}");
        }
        Ok(t)
    }

    /// Reads a trajectory file, with the note about a torn last row if one was dropped
    /// ([`Trajectory::parse_noting`]).
    pub fn load_noting(path: &Path) -> Result<(Self, Option<String>), TrajectoryError> {
        let text =
            crate::files::read_text(path, crate::files::FileKind::Trajectory).map_err(|e| {
                TrajectoryError {
                    file: path.display().to_string(),
                    line: 0,
                    message: e.reason(),
                }
            })?;
        Self::parse_noting(&text, &path.display().to_string())
    }

    /// Writes the trajectory as CSV (forces included if every sample has one).
    pub fn write_csv(&self, w: &mut impl Write) -> std::io::Result<()> {
        let with_force = self.samples.iter().all(|s| s.force.is_some());
        writeln!(
            w,
            "{}",
            if with_force {
                HEADER_WITH_FORCE
            } else {
                HEADER
            }
        )?;
        for s in &self.samples {
            write_row(
                w,
                s.t,
                s.position,
                s.buttons,
                if with_force { s.force } else { None },
            )?;
        }
        Ok(())
    }

    /// The samples.
    pub fn samples(&self) -> &[TrajectorySample] {
        &self.samples
    }

    /// Time of the last sample (s).
    pub fn duration(&self) -> f64 {
        self.samples[self.samples.len() - 1].t
    }

    /// Position (m, linear interpolation) and buttons (of the earlier sample) at `t`,
    /// held constant before the first and after the last sample. `cursor` is a hint
    /// (index of the sample at or before `t`) updated in place, making sequential
    /// playback O(1) per call.
    pub fn sample_at(&self, t: f64, cursor: &mut usize) -> (Vec3, u32) {
        let s = &self.samples;
        if *cursor >= s.len() || s[*cursor].t > t {
            *cursor = s.partition_point(|x| x.t <= t).saturating_sub(1);
        }
        while *cursor + 1 < s.len() && s[*cursor + 1].t <= t {
            *cursor += 1;
        }
        let a = &s[*cursor];
        if *cursor + 1 == s.len() || t <= a.t {
            return (a.position, a.buttons);
        }
        let b = &s[*cursor + 1];
        let w = (t - a.t) / (b.t - a.t);
        (a.position + (b.position - a.position) * w, a.buttons)
    }
}

/// Writes one CSV row; floats use Rust's shortest round-trip form, so a file read back
/// reproduces the values bit for bit.
pub fn write_row(
    w: &mut impl Write,
    t: f64,
    p: Vec3,
    buttons: u32,
    force: Option<Vec3>,
) -> std::io::Result<()> {
    match force {
        Some(f) => writeln!(
            w,
            "{t},{},{},{},{buttons},{},{},{}",
            p.x, p.y, p.z, f.x, f.y, f.z
        ),
        None => writeln!(w, "{t},{},{},{},{buttons}", p.x, p.y, p.z),
    }
}

/// A device that plays a trajectory back at the loop's clock.
pub struct ReplayDevice {
    trajectory: Trajectory,
    cursor: usize,
    sequence: u64,
    last_force: Vec3,
    rating: DeviceRating,
}

impl ReplayDevice {
    /// Plays `trajectory`; rated like a desktop device (8 N, 3000 N/m).
    pub fn new(trajectory: Trajectory) -> Self {
        Self {
            trajectory,
            cursor: 0,
            sequence: 0,
            last_force: Vec3::zeros(),
            rating: DeviceRating {
                max_force: 8.0,
                max_stiffness: 3000.0,
                workspace: None,
            },
        }
    }

    /// Plays `trajectory` as a device rated `rating` (the device a recording was made
    /// with).
    pub fn with_rating(trajectory: Trajectory, rating: DeviceRating) -> Self {
        Self {
            rating,
            ..Self::new(trajectory)
        }
    }

    /// The trajectory being played.
    pub fn trajectory(&self) -> &Trajectory {
        &self.trajectory
    }

    /// The last force written (N).
    pub fn last_force(&self) -> Vec3 {
        self.last_force
    }
}

impl HapticDevice for ReplayDevice {
    fn read(&mut self, now: f64) -> Result<DeviceSample, DeviceError> {
        let (position, buttons) = self.trajectory.sample_at(now, &mut self.cursor);
        self.sequence += 1;
        Ok(DeviceSample {
            position,
            buttons,
            device_time: now,
            sequence: self.sequence,
            orientation: None,
            gripper: None,
        })
    }

    fn write_force(&mut self, force: Vec3) -> Result<(), DeviceError> {
        self.last_force = force;
        Ok(())
    }

    fn rating(&self) -> DeviceRating {
        self.rating
    }

    fn name(&self) -> &str {
        "replay"
    }
}

#[cfg(test)]
mod torn_rows {
    use super::*;

    #[test]
    fn a_torn_last_row_of_a_recording_is_dropped_with_a_note_never_read_short() {
        // Cut inside the last number: "0.0021" would parse as 0.002.
        let text = format!(
            "{SESSION_TICKS_HEADER}\n0.001,0,0,0.001,0,0,1,0,1,normal,0,,,,,\n0.002,0,0,0.0021"
        );
        let (t, note) = Trajectory::parse_noting(&text, "ticks.csv").unwrap();
        assert_eq!(t.samples().len(), 1);
        assert!(note.unwrap().contains("row cut short"));
        // A palpa record file (its `# palpa` comment first): the same.
        let text = "# palpa record: …\nt,x,y,z,buttons,fx,fy,fz\n0,0,0,0,0,0,0,0\n0.001,0,0,0.00";
        let (t, note) = Trajectory::parse_noting(text, "rec.csv").unwrap();
        assert_eq!((t.samples().len(), note.is_some()), (1, true));
        // A hand-written file whose last line lacks its end of line but is whole: kept.
        let text = "t,x,y,z,buttons\n0,0,0,0,0\n0.001,0,0,0.5,0";
        let (t, note) = Trajectory::parse_noting(text, "hand.csv").unwrap();
        assert_eq!((t.samples().len(), note), (2, None));
        // Whose last line is cut so it no longer parses: dropped with the note.
        let text = "t,x,y,z,buttons\n0,0,0,0,0\n0.001,0,0";
        let (t, note) = Trajectory::parse_noting(text, "hand.csv").unwrap();
        assert_eq!((t.samples().len(), note.is_some()), (1, true));
        // A bad row before the last is still an error naming its line.
        let e = Trajectory::parse_noting("t,x,y,z,buttons\n0,0,0\n0.1,0,0,0,0\n", "b.csv");
        assert_eq!(e.unwrap_err().line, 2);
    }
}
