//! Viewers' control messages, sent where they act: a probe move straight to the virtual
//! stylus (a device like any other, read by its haptic thread, in scene coordinates),
//! a tissue reset to the model thread.

use std::thread::JoinHandle;

use crossbeam::channel::{Receiver, Sender, TrySendError};

use crate::rt::SlotWriter;
use crate::stream::{ControlReceiver, ProbeControl};
use crate::Vec3;

/// Tissue resets waiting for the model thread (more than a few are one reset).
const RESETS: usize = 4;

/// The model thread's end of the tissue resets viewers ask for.
pub type ResetReceiver = Receiver<()>;

/// The virtual stylus's input: the position a viewer picked (m, scene frame).
pub struct Stylus {
    input: SlotWriter<(Vec3, u32)>,
    /// Where it rests when released (m, scene frame).
    idle: Vec3,
}

impl Stylus {
    /// Stylus `input` and where it rests when released (`idle`, m, scene frame); it
    /// starts there.
    pub fn new(input: SlotWriter<(Vec3, u32)>, idle: Vec3) -> Self {
        let mut stylus = Self { input, idle };
        stylus.move_to(&idle);
        stylus
    }

    /// Moves the stylus to `position` (m, scene frame).
    pub fn move_to(&mut self, position: &Vec3) {
        self.input.write((*position, 0));
    }
}

/// Sends each viewer command where it acts.
pub struct ControlRouter {
    stylus: Option<Stylus>,
    resets: Sender<()>,
    warned_no_stylus: bool,
}

impl ControlRouter {
    /// Routes probe moves to `stylus` (if the first device is the virtual stylus) and
    /// resets to the returned receiver, for the model thread.
    pub fn new(stylus: Option<Stylus>) -> (Self, ResetReceiver) {
        let (resets, receiver) = crossbeam::channel::bounded(RESETS);
        let router = Self {
            stylus,
            resets,
            warned_no_stylus: false,
        };
        (router, receiver)
    }

    /// Acts on one command.
    pub fn route(&mut self, command: ProbeControl) {
        match (command, self.stylus.as_mut()) {
            (ProbeControl::MoveTo(p), Some(stylus)) => stylus.move_to(&p),
            (ProbeControl::Release, Some(stylus)) => {
                let idle = stylus.idle;
                stylus.move_to(&idle);
            }
            (ProbeControl::ResetTissue, _) => match self.resets.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) | Err(TrySendError::Disconnected(())) => {}
            },
            (ProbeControl::MoveTo(_) | ProbeControl::Release, None) => {
                if !self.warned_no_stylus {
                    self.warned_no_stylus = true;
                    tracing::warn!(
                        "a viewer moves the probe, but the device is not the virtual stylus; \
                         ignored"
                    );
                }
            }
        }
    }

    /// Routes what `commands` receives on a thread of its own (`palpa-control`) until
    /// the stream server hangs up.
    pub fn spawn(mut self, commands: ControlReceiver) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("palpa-control".into())
            .spawn(move || {
                for command in commands.iter() {
                    self.route(command);
                }
            })
    }
}
