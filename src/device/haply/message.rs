//! The Inverse Service's simulation-channel JSON, as palpa reads and writes it.
//!
//! Shapes from Haply's documentation (Inverse Service 3.x, "Simulation Channel",
//! <https://docs.haply.co/inverseSDK/service/api/simulation>, "WebSocket Protocol",
//! <https://docs.haply.co/inverseSDK/service/realtime/websocket-protocol>, "Control
//! Commands", <https://docs.haply.co/inverseSDK/service/realtime/control-commands>, and
//! "Basis Permutation", <https://docs.haply.co/inverseSDK/service/commons/basis>):
//!
//! * every message from the service lists devices by kind (`"inverse3": [...]`,
//!   `"verse_grip": [...]`), each with `device_id` and `state`; the first one after
//!   connecting (the inventory) also carries `config` and `status`;
//! * `state.cursor_position` is the cursor in metres, `state.button` the Verse Grip's
//!   button;
//! * the force command is `{"inverse3": [{"device_id": ID, "commands":
//!   {"set_cursor_force": {"vector": {"x", "y", "z"}}}}]}` in newtons; commands are
//!   per-tick and forgotten: a device that stops receiving them returns to idle;
//! * `session.configure` on the first command names the client (`profile.name`) and
//!   the axes (`basis.permutation`; `"XYZ"` keeps Haply's +X right, +Y forward, +Z up).

use serde::Deserialize;
use serde_json::json;

use crate::Vec3;

/// The name palpa registers its session under (`session.configure.profile.name`).
pub const PROFILE_NAME: &str = "palpa";

/// What one message from the service says about the Inverse3 palpa drives.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// The Inverse3's `device_id` (the first one listed, in the inventory).
    pub device_id: String,
    /// `cursor_position` (m, Haply frame), absent when the message left it out.
    pub position: Option<Vec3>,
    /// Bit 0: the first Verse Grip's button.
    pub buttons: u32,
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
    verse_grip: Vec<VerseGrip>,
}

#[derive(Deserialize)]
struct Inverse3 {
    device_id: String,
    #[serde(default)]
    state: Option<Inverse3State>,
}

#[derive(Deserialize)]
struct Inverse3State {
    #[serde(default)]
    cursor_position: Option<Xyz>,
}

#[derive(Deserialize)]
struct VerseGrip {
    #[serde(default)]
    state: Option<VerseGripState>,
}

#[derive(Deserialize)]
struct VerseGripState {
    #[serde(default)]
    button: bool,
}

#[derive(Deserialize)]
struct Xyz {
    x: f64,
    y: f64,
    z: f64,
}

/// Reads one service message: the entry of `device_id`, or of the first Inverse3 listed
/// when `device_id` is `None` (the inventory).
pub fn decode(text: &str, device_id: Option<&str>) -> Result<Reading, MessageError> {
    let frame: Frame = serde_json::from_str(text)?;
    let entry = match device_id {
        None => frame.inverse3.first().ok_or(MessageError::NoInverse3)?,
        Some(id) => frame
            .inverse3
            .iter()
            .find(|d| d.device_id == id)
            .ok_or_else(|| MessageError::DeviceGone(id.to_owned()))?,
    };
    let position = entry
        .state
        .as_ref()
        .and_then(|s| s.cursor_position.as_ref())
        .map(|p| Vec3::new(p.x, p.y, p.z));
    let pressed = frame
        .verse_grip
        .first()
        .and_then(|g| g.state.as_ref())
        .is_some_and(|s| s.button);
    Ok(Reading {
        device_id: entry.device_id.clone(),
        position,
        buttons: u32::from(pressed),
    })
}

/// The `set_cursor_force` command for `device_id` (force in N, Haply frame); with
/// `handshake`, the first command of a session, it also configures the session: palpa's
/// profile name and the identity basis.
pub fn force_command(device_id: &str, force: &Vec3, handshake: bool) -> String {
    let device = json!({
        "device_id": device_id,
        "commands": {
            "set_cursor_force": { "vector": { "x": force.x, "y": force.y, "z": force.z } }
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
          "basis": { "permutation": "XYZ" }
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
        let sent: Value =
            serde_json::from_str(&force_command("049D", &Vec3::new(0.0, 0.0, 1.5), false)).unwrap();
        assert_eq!(sent, documented);

        let first: Value =
            serde_json::from_str(&force_command("049D", &Vec3::zeros(), true)).unwrap();
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
