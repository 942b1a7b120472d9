//! The Inverse Service's simulation-channel JSON, as palpa reads and writes it.
//!
//! Shapes from Haply's documentation (Inverse Service 3.x, "Simulation Channel",
//! <https://docs.haply.co/inverseSDK/service/api/simulation>, "WebSocket Protocol",
//! <https://docs.haply.co/inverseSDK/service/realtime/websocket-protocol>, "Control
//! Commands", <https://docs.haply.co/inverseSDK/service/realtime/control-commands>, and
//! "Basis Permutation", <https://docs.haply.co/inverseSDK/service/commons/basis>), and
//! from Haply's own clients (the tutorials of the 3.5 pages; NVIDIA Isaac Lab's
//! `se3_haply.py` and the service 3.1 Python samples):
//!
//! * every message from the service lists devices by kind (`"inverse3": [...]`,
//!   `"verse_grip": [...]`, `"wireless_verse_grip": [...]`), each with `device_id` and
//!   `state`; the first one after connecting (the inventory) also carries `config` (3.5:
//!   `preset`, `mount`, `basis`, `handedness`, `device_info`) and `status`;
//! * `state.cursor_position` is the cursor in metres, `state.current_cursor_force` the
//!   force the service applies (3.5); a wired Verse Grip's `state.button`, a Wireless
//!   Verse Grip's `state.buttons.{a,b,c}`, and either's `state.orientation` (a unit
//!   quaternion `w, x, y, z`; the grip points along its own +Y);
//! * the force command is `{"inverse3": [{"device_id": ID, "commands":
//!   {"set_cursor_force": {FORMAT: {"x", "y", "z"}}}}]}` in newtons, FORMAT `vector`
//!   (the 3.5 documentation) or `values` (the 3.1 samples and the public clients);
//!   commands are per-tick and forgotten: a device that stops receiving them returns to
//!   idle;
//! * `session.configure` on the first command names the client (`profile.name`) and
//!   the axes (`basis.permutation`; `"XYZ"` keeps Haply's +X right, +Y forward, +Z up).

use serde::Deserialize;
use serde_json::json;

use crate::device::Orientation;
use crate::Vec3;

/// The name palpa registers its session under (`session.configure.profile.name`).
pub const PROFILE_NAME: &str = "palpa";

/// Which key of `set_cursor_force` carries the force vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForceFormat {
    /// `{"vector": {x, y, z}}`: the Inverse Service 3.5 documentation.
    Vector,
    /// `{"values": {x, y, z}}`: the 3.1 samples and Haply's public clients.
    Values,
}

impl ForceFormat {
    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            ForceFormat::Vector => "vector",
            ForceFormat::Values => "values",
        }
    }

    /// The other one.
    pub fn other(self) -> Self {
        match self {
            ForceFormat::Vector => ForceFormat::Values,
            ForceFormat::Values => ForceFormat::Vector,
        }
    }
}

/// What one message from the service says about the Inverse3 palpa drives.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// The Inverse3's `device_id` (the first one listed, in the inventory).
    pub device_id: String,
    /// `cursor_position` (m, Haply frame), absent when the message left it out.
    pub position: Option<Vec3>,
    /// Bits 0, 1, 2: the first grip's buttons a, b, c (a wired grip's one button is
    /// bit 0).
    pub buttons: u32,
    /// The first grip's orientation in palpa's tool convention (the stylus along the
    /// tool's +x, from the tip towards the hand), Haply frame.
    pub orientation: Option<Orientation>,
    /// `current_cursor_force` (N), where the service reports it.
    pub applied_force: Option<Vec3>,
}

/// What the inventory says about the device palpa drives, beyond a state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inventory {
    /// `config.device_info.uuid`, where given.
    pub uuid: Option<String>,
    /// `config.preset` (3.5), where given.
    pub preset: Option<String>,
    /// `config.mount` (3.5): position (m), rotation (w, x, y, z), scale, where given.
    pub mount: Option<Mount>,
    /// `config.handedness`, where given.
    pub handedness: Option<String>,
}

/// The mount transform the service applies to the Inverse3's positions (3.5 `config`).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct Mount {
    /// Translation (m).
    pub position: Xyz,
    /// Rotation, a quaternion.
    pub rotation: Wxyz,
    /// Scale per axis.
    pub scale: Xyz,
}

impl Mount {
    /// Whether it leaves positions as they are.
    pub fn is_identity(&self) -> bool {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let Mount {
            position: p,
            rotation: r,
            scale: s,
        } = self;
        [p.x, p.y, p.z].iter().all(|v| close(*v, 0.0))
            && close(r.w.abs(), 1.0)
            && [s.x, s.y, s.z].iter().all(|v| close(*v, 1.0))
    }
}

/// Why a message from the service cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    /// Not JSON of the documented shape.
    #[error("not the Inverse Service's JSON ({0})")]
    Malformed(#[from] serde_json::Error),
    /// The inventory lists no Inverse3.
    #[error("the service lists no Inverse3 (is one plugged in and powered?)")]
    NoInverse3,
    /// The Inverse3 palpa drives is no longer listed.
    #[error("Inverse3 {0} is no longer listed (unplugged?)")]
    DeviceGone(String),
}

#[derive(Deserialize)]
struct Frame {
    #[serde(default)]
    inverse3: Vec<Inverse3>,
    #[serde(default)]
    verse_grip: Vec<Grip>,
    #[serde(default)]
    wireless_verse_grip: Vec<Grip>,
}

#[derive(Deserialize)]
struct Inverse3 {
    device_id: String,
    #[serde(default)]
    state: Option<Inverse3State>,
    #[serde(default)]
    config: Option<Config>,
}

#[derive(Deserialize)]
struct Inverse3State {
    #[serde(default)]
    cursor_position: Option<Xyz>,
    #[serde(default)]
    current_cursor_force: Option<Xyz>,
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    device_info: Option<DeviceInfo>,
    #[serde(default)]
    preset: Option<String>,
    #[serde(default)]
    mount: Option<Mount>,
    #[serde(default)]
    handedness: Option<String>,
}

#[derive(Deserialize)]
struct DeviceInfo {
    #[serde(default)]
    uuid: Option<String>,
}

#[derive(Deserialize)]
struct Grip {
    #[serde(default)]
    state: Option<GripState>,
}

#[derive(Deserialize)]
struct GripState {
    /// A wired Verse Grip's one button.
    #[serde(default)]
    button: bool,
    /// A Wireless Verse Grip's buttons.
    #[serde(default)]
    buttons: Option<GripButtons>,
    #[serde(default)]
    orientation: Option<Wxyz>,
}

#[derive(Deserialize)]
struct GripButtons {
    #[serde(default)]
    a: bool,
    #[serde(default)]
    b: bool,
    #[serde(default)]
    c: bool,
}

/// A vector as the service writes it.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct Xyz {
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
    /// z.
    pub z: f64,
}

/// A quaternion as the service writes it.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct Wxyz {
    /// w.
    pub w: f64,
    /// x.
    pub x: f64,
    /// y.
    pub y: f64,
    /// z.
    pub z: f64,
}

impl GripState {
    fn buttons(&self) -> u32 {
        match &self.buttons {
            Some(b) => u32::from(b.a) | u32::from(b.b) << 1 | u32::from(b.c) << 2,
            None => u32::from(self.button),
        }
    }

    /// The grip points along its own +Y: palpa's tool +x (tip towards the hand) is the
    /// grip's −Y, so the tool frame is the grip's turned −90° about its z.
    fn orientation(&self) -> Option<Orientation> {
        let q = self.orientation?;
        let grip = nalgebra::Quaternion::new(q.w, q.x, q.y, q.z);
        if !grip.coords.iter().all(|c| c.is_finite()) || grip.norm() < 1e-6 {
            return None;
        }
        let to_tool = Orientation::from_axis_angle(&Vec3::z_axis(), -std::f64::consts::FRAC_PI_2);
        Some(Orientation::from_quaternion(grip) * to_tool)
    }
}

fn vec3(p: &Xyz) -> Vec3 {
    Vec3::new(p.x, p.y, p.z)
}

/// Reads one service message: the entry of `device_id`, or of the first Inverse3 listed
/// when `device_id` is `None` (the inventory).
pub fn decode(text: &str, device_id: Option<&str>) -> Result<Reading, MessageError> {
    decode_with_inventory(text, device_id).map(|(r, _)| r)
}

/// [`decode`], and what the message's `config` says about the device (the inventory's).
pub fn decode_with_inventory(
    text: &str,
    device_id: Option<&str>,
) -> Result<(Reading, Inventory), MessageError> {
    let frame: Frame = serde_json::from_str(text)?;
    let entry = match device_id {
        None => frame.inverse3.first().ok_or(MessageError::NoInverse3)?,
        Some(id) => frame
            .inverse3
            .iter()
            .find(|d| d.device_id == id)
            .ok_or_else(|| MessageError::DeviceGone(id.to_owned()))?,
    };
    let state = entry.state.as_ref();
    // The Wireless Verse Grip first (Haply's current grip), else a wired one.
    let grip = frame
        .wireless_verse_grip
        .first()
        .or(frame.verse_grip.first())
        .and_then(|g| g.state.as_ref());
    let reading = Reading {
        device_id: entry.device_id.clone(),
        position: state.and_then(|s| s.cursor_position.as_ref()).map(vec3),
        buttons: grip.map_or(0, GripState::buttons),
        orientation: grip.and_then(GripState::orientation),
        applied_force: state
            .and_then(|s| s.current_cursor_force.as_ref())
            .map(vec3),
    };
    let config = entry.config.as_ref();
    let inventory = Inventory {
        uuid: config
            .and_then(|c| c.device_info.as_ref())
            .and_then(|i| i.uuid.clone()),
        preset: config.and_then(|c| c.preset.clone()),
        mount: config.and_then(|c| c.mount),
        handedness: config.and_then(|c| c.handedness.clone()),
    };
    Ok((reading, inventory))
}

/// The `set_cursor_force` command for `device_id` (force in N, Haply frame) in `format`;
/// with `handshake`, the first command of a session, it also configures the session:
/// palpa's profile name and the identity basis.
pub fn force_command(
    device_id: &str,
    force: &Vec3,
    format: ForceFormat,
    handshake: bool,
) -> String {
    let device = json!({
        "device_id": device_id,
        "commands": {
            "set_cursor_force": { format.key(): { "x": force.x, "y": force.y, "z": force.z } }
        }
    });
    let message = if handshake {
        json!({
            "session": {
                "configure": {
                    "profile": { "name": PROFILE_NAME },
                    "basis": { "permutation": "XYZ" }
                }
            },
            "inverse3": [device]
        })
    } else {
        json!({ "inverse3": [device] })
    };
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The inventory example of "WebSocket Protocol" (service 3.5), `…` placeholders
    /// replaced by strings and the transform cut to what the page shows in full.
    const INVENTORY_3_5: &str = r#"{
      "session_id": 7,
      "inverse3": [{
        "device_id": "049D",
        "config": {
          "type": "inverse3", "port": "COM12",
          "device_info": { "major_version": 7, "minor_version": 4, "id": "049D", "device_type": 4, "uuid": "u" },
          "gravity_compensation": { "enabled": true, "scaling_factor": 1.0 },
          "handedness": "right", "streaming_mode": "USB",
          "preset": "defaults",
          "basis": { "permutation": "XYZ" },
          "mount": { "position": { "x": 0, "y": 0, "z": 0 }, "rotation": { "w": 1, "x": 0, "y": 0, "z": 0 }, "scale": { "x": 1, "y": 1, "z": 1 } }
        },
        "state": {
          "cursor_position": { "x": 0.0, "y": -0.12, "z": 0.15 },
          "cursor_velocity": { "x": 0.0, "y": 0.0, "z": 0.0 },
          "angular_position": { "a0": 0.0, "a1": 0.0, "a2": 0.0 },
          "body_orientation": { "w": 1.0, "x": 0.0, "y": 0.0, "z": 0.0 },
          "current_cursor_force": { "x": 0.0, "y": 0.0, "z": 0.0 },
          "control_domain": "cartesian", "control_mode": "idle"
        }
      }]
    }"#;

    /// The initial message example of "Simulation Channel" (service 3.4), with its
    /// Verse Grip (button pressed here; the page shows `false`).
    const INVENTORY_3_4: &str = r#"{
      "inverse3": [{
        "device_id": "04BA",
        "config": { "type": "inverse3", "port": "COM13", "handedness": "right",
                    "device_info": { "minor_version": 1, "major_version": 7, "id": "04BA", "model": 4,
                                     "uuid": "2D35F80DD9005F599B68F49944CB04BA" } },
        "state": {
          "angular_position": { "a0": -69.31704, "a1": 137.62952, "a2": 19.832787 },
          "angular_velocity": { "a0": 0, "a1": 0, "a2": 0 },
          "body_orientation": { "x": -0.01940918, "y": 0.7026367, "z": 0.00048828125, "w": 0.7113037 },
          "cursor_position": { "x": 0.07842738, "y": -0.14836666, "z": 0.14297646 },
          "cursor_velocity": { "x": -0.011969013, "y": 0.0012009288, "z": -0.043197 },
          "mode": "idle"
        },
        "status": { "calibrated": false, "in_use": false, "power_supply": true, "ready": true, "started": true }
      }],
      "verse_grip": [{
        "device_id": "61548",
        "config": { "port": "COM3", "type": "verse_grip" },
        "state": { "button": true, "hall": 0,
                   "orientation": { "x": -0.5019531, "y": 0.8632202, "z": -0.048095703, "w": -0.022338867 } }
      }]
    }"#;

    #[test]
    fn the_documented_inventories_decode_to_the_first_inverse3_and_its_cursor() {
        let r = decode(INVENTORY_3_5, None).unwrap();
        assert_eq!(r.device_id, "049D");
        assert_eq!(r.position, Some(Vec3::new(0.0, -0.12, 0.15)));
        assert_eq!(r.buttons, 0);

        let r = decode(INVENTORY_3_4, Some("04BA")).unwrap();
        assert_eq!(
            r.position,
            Some(Vec3::new(0.07842738, -0.14836666, 0.14297646))
        );
        assert_eq!(r.buttons, 1, "the Verse Grip's button is bit 0");
    }

    /// A state update with a Wireless Verse Grip as Isaac Lab's client reads it
    /// (`wireless_verse_grip`, `buttons.{a,b,c}`, `orientation`).
    const WIRELESS_STATE: &str = r#"{
      "inverse3": [{ "device_id": "049D",
        "state": { "cursor_position": { "x": 0.01, "y": -0.1, "z": 0.2 },
                   "current_cursor_force": { "x": 0.0, "y": 0.5, "z": 1.0 } } }],
      "wireless_verse_grip": [{ "device_id": "61548",
        "state": { "buttons": { "a": false, "b": true, "c": true }, "hall": 3,
                   "orientation": { "w": 0.7071067811865476, "x": 0.0, "y": 0.0, "z": 0.7071067811865476 } } }]
    }"#;

    #[test]
    fn a_wireless_grip_gives_three_buttons_and_its_orientation_and_the_service_its_force() {
        let r = decode(WIRELESS_STATE, Some("049D")).unwrap();
        assert_eq!(r.buttons, 0b110, "a, b, c are bits 0, 1, 2");
        assert_eq!(r.applied_force, Some(Vec3::new(0.0, 0.5, 1.0)));
        // The grip turned 90° about z points along Haply's −X; the stylus runs from the
        // tip back towards the hand: +X.
        let back = r.orientation.unwrap() * Vec3::x();
        assert!((back - Vec3::x()).norm() < 1e-12, "{back}");
        // Unturned, the grip points forward (+Y): the stylus's back end is at −Y.
        let unturned = WIRELESS_STATE.replace(
            r#""w": 0.7071067811865476, "x": 0.0, "y": 0.0, "z": 0.7071067811865476"#,
            r#""w": 1.0, "x": 0.0, "y": 0.0, "z": 0.0"#,
        );
        let back = decode(&unturned, Some("049D"))
            .unwrap()
            .orientation
            .unwrap()
            * Vec3::x();
        assert!((back + Vec3::y()).norm() < 1e-12, "{back}");
        // A wired grip's one button, and the inventory's preset, mount and uuid.
        assert_eq!(decode(INVENTORY_3_4, None).unwrap().buttons, 1);
        let (_, inventory) = decode_with_inventory(INVENTORY_3_5, None).unwrap();
        assert_eq!(inventory.preset.as_deref(), Some("defaults"));
        assert!(inventory.mount.unwrap().is_identity());
        assert_eq!(inventory.uuid.as_deref(), Some("u"));
        let (_, older) = decode_with_inventory(INVENTORY_3_4, None).unwrap();
        assert_eq!(
            (older.preset, older.mount),
            (None, None),
            "3.4 reports neither"
        );
    }

    #[test]
    fn an_update_without_the_cursor_is_no_new_position_and_a_missing_device_is_named() {
        let partial = r#"{"inverse3":[{"device_id":"049D","state":{"mode":"idle"}}]}"#;
        assert_eq!(decode(partial, Some("049D")).unwrap().position, None);
        let e = decode(INVENTORY_3_5, Some("0777")).unwrap_err();
        assert!(e.to_string().contains("0777"), "{e}");
        let e = decode(r#"{"verse_grip":[]}"#, None).unwrap_err();
        assert!(matches!(e, MessageError::NoInverse3), "{e}");
        for bad in [
            "{not json",
            r#"{"inverse3":[{"device_id":"049D","state":{"cursor_position":{"x":"up"}}}]}"#,
            r#"{"inverse3":{"device_id":"049D"}}"#,
        ] {
            let e = decode(bad, Some("049D")).unwrap_err();
            assert!(matches!(e, MessageError::Malformed(_)), "{bad}: {e}");
            assert!(e.to_string().contains("Inverse Service"), "{e}");
        }
    }

    #[test]
    fn the_force_command_is_the_documented_set_cursor_force() {
        // The example of "Control Commands", set_cursor_force.
        let documented: Value = serde_json::from_str(
            r#"{ "inverse3": [{ "device_id": "049D",
                 "commands": { "set_cursor_force": { "vector": { "x": 0.0, "y": 0.0, "z": 1.5 } } } }] }"#,
        )
        .unwrap();
        let sent: Value = serde_json::from_str(&force_command(
            "049D",
            &Vec3::new(0.0, 0.0, 1.5),
            ForceFormat::Vector,
            false,
        ))
        .unwrap();
        assert_eq!(sent, documented);
        // The same force as Haply's public clients send it.
        let values: Value = serde_json::from_str(&force_command(
            "049D",
            &Vec3::new(0.0, 0.0, 1.5),
            ForceFormat::Values,
            false,
        ))
        .unwrap();
        assert_eq!(
            values["inverse3"][0]["commands"]["set_cursor_force"]["values"],
            documented["inverse3"][0]["commands"]["set_cursor_force"]["vector"]
        );

        let first: Value = serde_json::from_str(&force_command(
            "049D",
            &Vec3::zeros(),
            ForceFormat::Vector,
            true,
        ))
        .unwrap();
        assert_eq!(first["session"]["configure"]["basis"]["permutation"], "XYZ");
        assert_eq!(
            first["session"]["configure"]["profile"]["name"],
            PROFILE_NAME
        );
        assert_eq!(
            first["inverse3"][0]["commands"]["set_cursor_force"]["vector"]["z"],
            0.0
        );
    }
}
