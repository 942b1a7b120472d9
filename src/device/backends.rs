//! Which device backends this machine can use, for `palpa devices`.

use std::time::Duration;

use super::haply;
use super::sdk::library::LibrarySearch;
use super::sdk::{dhd, openhaptics};

/// How long `palpa devices` waits for the Inverse Service to answer.
const HAPLY_PROBE_TIMEOUT: Duration = Duration::from_millis(300);

/// One backend and whether it is usable here.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendStatus {
    /// The `--device` spec that selects it (e.g. `hid[:PROFILE.toml]`).
    pub spec: &'static str,
    /// What it drives, in a few words.
    pub drives: &'static str,
    /// `Ok(what was found)` when usable, `Err(what was looked for and not found)`.
    pub availability: Result<String, String>,
}

/// Every backend palpa has, in the order `palpa devices` lists them.
pub fn statuses() -> Vec<BackendStatus> {
    vec![
        BackendStatus {
            spec: "hid[:PROFILE.toml]",
            drives: "HID devices described by a profile",
            availability: match hidapi::HidApi::new() {
                Ok(api) => Ok(format!(
                    "hidapi: {} HID interfaces present",
                    api.device_list().count()
                )),
                Err(e) => Err(format!("hidapi cannot enumerate devices: {e}")),
            },
        },
        BackendStatus {
            spec: "sim[:still|circle|press]",
            drives: "a virtual stylus (viewer or script)",
            availability: Ok("built in".into()),
        },
        BackendStatus {
            spec: "haply[:ws://HOST:PORT]",
            drives: "Haply Inverse3 (Inverse Service)",
            availability: haply::probe(haply::DEFAULT_URL, HAPLY_PROBE_TIMEOUT),
        },
        BackendStatus {
            spec: "replay:FILE.csv",
            drives: "a recorded trajectory",
            availability: Ok("built in".into()),
        },
        BackendStatus {
            spec: "openhaptics[:NAME]",
            drives: "Touch, Touch X, Phantom (OpenHaptics)",
            availability: sdk_library(&openhaptics::LIBRARY),
        },
        BackendStatus {
            spec: "dhd[:INDEX]",
            drives: "Force Dimension devices, Falcon (DHD)",
            availability: sdk_library(&dhd::LIBRARY),
        },
    ]
}

/// Whether a vendor SDK's library loads here: where it was found, or the one line
/// naming what was looked for and where.
fn sdk_library(search: &LibrarySearch) -> Result<String, String> {
    search
        .load()
        .map(|loaded| format!("{} from {}", search.file, loaded.origin))
}
