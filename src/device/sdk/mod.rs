//! Vendor SDKs loaded at run time (`libloading`), so palpa builds and runs where they
//! are absent:
//!
//! * [`openhaptics`] — 3D Systems Touch, Touch X and Phantom through OpenHaptics HDAPI
//!   (`libHD.so`); HDAPI's servo scheduler calls palpa's haptic tick once per frame;
//! * [`dhd`] — Force Dimension omega, sigma, delta, lambda and the Novint Falcon through
//!   the Force Dimension SDK (`libdhd.so`), polled from palpa's haptic thread;
//! * [`library`] — where each library is looked for, and the one-line message when it is
//!   not found;
//! * [`hd_error`] — HDAPI's error codes and which of them stop the servo loop.

pub mod dhd;
pub mod hd_error;
pub mod library;
pub mod openhaptics;

use std::ffi::{c_char, CStr};

use crate::device::Orientation;
use crate::{Mat3, Vec3};

/// Declares a table of C functions taken from a loaded SDK library, and `resolve`, which
/// names the first missing symbol. Written here rather than with a wrapper crate
/// (`dlopen2`'s derive) because libloading alone is enough: the table copies each
/// function pointer out and keeps the `Library` alive beside them, so no borrowed
/// `Symbol` outlives its library.
macro_rules! sdk_functions {
    ($(#[$meta:meta])* struct $name:ident {
        $( $(#[$fmeta:meta])* $field:ident = $symbol:literal : $ty:ty, )*
    }) => {
        $(#[$meta])*
        struct $name {
            $( $(#[$fmeta])* $field: $ty, )*
            /// The library the pointers above point into; unloaded after them.
            _library: libloading::Library,
        }

        impl $name {
            /// Takes every function from `loaded`, naming the first one it lacks.
            fn resolve(
                loaded: crate::device::sdk::library::LoadedLibrary,
                sdk: &str,
            ) -> Result<Self, String> {
                $(
                    // SAFETY: the type is the function's declaration in the SDK's
                    // header (C calling convention on Linux); the copied pointer is
                    // only called while `_library`, stored beside it, stays loaded.
                    let $field: $ty = unsafe {
                        *loaded
                            .library
                            .get::<$ty>(concat!($symbol, "\0").as_bytes())
                            .map_err(|e| {
                                format!(
                                    "{sdk} library {} lacks `{}`: {}",
                                    loaded.origin,
                                    $symbol,
                                    e.to_string().replace('\n', " ")
                                )
                            })?
                    };
                )*
                Ok(Self { $( $field, )* _library: loaded.library })
            }
        }
    };
}
use sdk_functions;

/// The C string an SDK returned, or `fallback` for a null pointer.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string that outlives the call.
unsafe fn c_text(ptr: *const c_char, fallback: &str) -> String {
    if ptr.is_null() {
        fallback.to_owned()
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The orientation whose tool x and y axes are `x` and `y` (device frame), made
/// orthonormal first as CHAI3D does with SDK matrices (x kept, y made perpendicular to
/// it); `None` when they are not finite or (nearly) parallel. No allocation.
fn orientation_from_axes(x: Vec3, y: Vec3) -> Option<Orientation> {
    let x = x.try_normalize(1e-9)?;
    let z = x.cross(&y).try_normalize(1e-9)?;
    let y = z.cross(&x);
    let frame = Mat3::from_columns(&[x, y, z]);
    frame.iter().all(|v| v.is_finite()).then(|| {
        Orientation::from_rotation_matrix(&nalgebra::Rotation3::from_matrix_unchecked(frame))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_orientation_from_two_axes_keeps_x_and_is_right_handed() {
        let q = orientation_from_axes(Vec3::new(0.0, 2.0, 0.0), Vec3::new(-1.0, 0.3, 0.0)).unwrap();
        assert!((q * Vec3::x() - Vec3::y()).norm() < 1e-12);
        assert!((q * Vec3::y() - Vec3::new(-1.0, 0.0, 0.0)).norm() < 1e-12);
        assert!((q * Vec3::z() - Vec3::z()).norm() < 1e-12);
        assert!(orientation_from_axes(Vec3::x(), Vec3::x()).is_none());
        assert!(orientation_from_axes(Vec3::new(f64::NAN, 0.0, 0.0), Vec3::y()).is_none());
    }
}
