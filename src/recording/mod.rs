//! Recordings: the one writer of per-tick CSVs (`palpa serve --record`, `palpa record`,
//! `palpa replay --record`), the self-contained recording directory (scene and every file
//! it names, devices, ticks, visual stream), and reading one back (`palpa replay DIR`,
//! `palpa recording check DIR`). docs/recordings.md describes the files.

pub mod device;
pub mod open;
pub mod scene_copy;
pub mod session_dir;
pub mod ticks;

pub use device::DeviceRecord;
pub use open::{check, CheckLine, Recorded};
pub use scene_copy::SceneInputs;
pub use session_dir::{Existing, Manifest, RecordedBy, RecordingDir};
pub use ticks::{RecordingHealth, RowFormat, TickFile, TickFileSummary, TickWriter};
