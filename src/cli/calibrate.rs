//! The calibration step of encoder devices, from the terminal.

use crate::device::CalibrationRequest;

/// The calibration step of encoder devices: each line on stdin (Enter) makes the pose
/// the device is held in its calibration pose. The thread ends with stdin.
pub fn listen_for_calibration(request: CalibrationRequest) {
    println!("calibration: hold the arm in its calibration pose and press Enter (any time)");
    let spawned = std::thread::Builder::new()
        .name("palpa-calibrate".into())
        .spawn(move || {
            for _line in std::io::stdin().lines().map_while(Result::ok) {
                request.request();
                println!("calibration: this pose is now the calibration pose");
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("no calibration from the terminal: {e}");
    }
}
