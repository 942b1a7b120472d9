//! Trajectory files (CSV `t,x,y,z,buttons` in s and m, optional `fx,fy,fz` in N) and the
//! `replay` device that plays one back.

use super::{DeviceError, DeviceRating, DeviceSample, HapticDevice};
use crate::Vec3;
use std::io::Write;
use std::path::Path;

/// Header of a trajectory without forces.
pub const HEADER: &str = "t,x,y,z,buttons";
/// Header of a trajectory with forces.
pub const HEADER_WITH_FORCE: &str = "t,x,y,z,buttons,fx,fy,fz";

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

/// A probe trajectory: samples with strictly increasing time.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    samples: Vec<TrajectorySample>,
}

/// A trajectory file that cannot be read, naming the file and line.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TrajectoryError {
    /// File (or source) name.
    pub file: String,
    /// 1-based line number (0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl Trajectory {
    /// A trajectory from samples (time strictly increasing, at least one sample, all
    /// finite; `source` names it in errors).
    pub fn new(samples: Vec<TrajectorySample>, source: &str) -> Result<Self, TrajectoryError> {
        let err = |line: usize, message: String| TrajectoryError {
            file: source.to_string(),
            line,
            message,
        };
        if samples.is_empty() {
            return Err(err(0, "no samples".into()));
        }
        for (i, s) in samples.iter().enumerate() {
            let finite = s.t.is_finite()
                && s.position.iter().all(|c| c.is_finite())
                && s.force.is_none_or(|f| f.iter().all(|c| c.is_finite()));
            if !finite {
                return Err(err(i + 2, "non-finite value".into()));
            }
            if i > 0 && s.t <= samples[i - 1].t {
                return Err(err(
                    i + 2,
                    format!(
                        "time {} is not after the previous row's {}",
                        s.t,
                        samples[i - 1].t
                    ),
                ));
            }
        }
        Ok(Self { samples })
    }

    /// Parses CSV text; `source` (the file name) appears in errors with the line.
    pub fn parse(text: &str, source: &str) -> Result<Self, TrajectoryError> {
        let err = |line: usize, message: String| TrajectoryError {
            file: source.to_string(),
            line,
            message,
        };
        let mut lines = text.lines().enumerate();
        let header = lines
            .next()
            .map(|(_, l)| l.trim().replace(' ', ""))
            .ok_or_else(|| err(1, "empty file".into()))?;
        let with_force = match header.as_str() {
            HEADER => false,
            HEADER_WITH_FORCE => true,
            other => {
                return Err(err(
                    1,
                    format!("header `{other}`, expected `{HEADER}` or `{HEADER_WITH_FORCE}`"),
                ))
            }
        };
        let columns = if with_force { 8 } else { 5 };
        let names: Vec<&str> = HEADER_WITH_FORCE.split(',').collect();
        let mut samples = Vec::new();
        for (i, line) in lines {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() != columns {
                return Err(err(
                    line_no,
                    format!("{} fields, expected {columns}", fields.len()),
                ));
            }
            let mut v = [0.0; 8];
            for (j, f) in fields.iter().enumerate() {
                if j == 4 {
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
            let buttons = fields[4].parse::<u32>().map_err(|_| {
                err(
                    line_no,
                    format!("buttons: `{}` is not a bit mask", fields[4]),
                )
            })?;
            samples.push(TrajectorySample {
                t: v[0],
                position: Vec3::new(v[1], v[2], v[3]),
                buttons,
                force: with_force.then(|| Vec3::new(v[5], v[6], v[7])),
            });
        }
        if samples.is_empty() {
            return Err(err(1, "header but no samples".into()));
        }
        Self::new(samples, source)
    }

    /// Reads a trajectory file.
    pub fn load(path: &Path) -> Result<Self, TrajectoryError> {
        let text = std::fs::read_to_string(path).map_err(|e| TrajectoryError {
            file: path.display().to_string(),
            line: 0,
            message: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
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
            },
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
