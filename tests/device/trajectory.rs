//! Trajectory files: bad times are errors naming the file's real line, and nothing is
//! sized from a time before it is bounded.

use palpa::device::replay::{Trajectory, TrajectorySample, MAX_TRAJECTORY_TIME};
use palpa::Vec3;

/// Parses `text` as `t.csv` and returns the error message.
#[track_caller]
fn error(text: &str) -> String {
    Trajectory::parse(text, "t.csv")
        .expect_err("bad trajectory must be an error")
        .to_string()
}

#[test]
fn a_time_past_the_maximum_is_an_error_naming_the_line() {
    // Issue input: `replay` of this allocated 72 GB (one row per 1 ms tick to t = 10⁶ s).
    let e = error("t,x,y,z,buttons\n0,0,0,0,0\n1000000,0,0,0,0\n");
    assert!(e.starts_with("t.csv:3: t: 1000000 s is outside"), "{e}");
    assert!(e.contains(&format!("0..={MAX_TRAJECTORY_TIME} s")), "{e}");
    // Issue input: t = 1e300 made `replay` write 0 ticks and exit 0.
    let e = error("t,x,y,z,buttons\n1e300,0,0,0,0\n");
    assert!(e.starts_with("t.csv:2: t: 1e300 s is outside"), "{e}");
    // The bound itself is accepted; a negative time is not.
    let ok = format!("t,x,y,z,buttons\n0,0,0,0,0\n{MAX_TRAJECTORY_TIME},0,0,0,0\n");
    assert_eq!(
        Trajectory::parse(&ok, "t.csv").unwrap().duration(),
        MAX_TRAJECTORY_TIME
    );
    let e = error("t,x,y,z,buttons\n-1,0,0,0,0\n");
    assert!(e.starts_with("t.csv:2: t: -1 s is outside"), "{e}");
}

#[test]
fn times_must_be_finite_and_increasing() {
    for bad in ["NaN", "inf", "-inf", "1e309"] {
        let e = error(&format!("t,x,y,z,buttons\n0,0,0,0,0\n{bad},0,0,0,0\n"));
        assert!(e.starts_with("t.csv:3: t: `"), "{bad}: {e}");
        assert!(e.contains("is not a finite number"), "{bad}: {e}");
    }
    let e = error("t,x,y,z,buttons\n0,0,0,0,0\n0.002,0,0,0,0\n0.001,0,0,0,0\n");
    assert!(
        e.starts_with("t.csv:4: time 0.001 is not after the previous sample's 0.002 (s)"),
        "{e}"
    );
    let e = error("t,x,y,z,buttons\n0,0,0,0,0\n0,0,0,0,0\n");
    assert!(e.starts_with("t.csv:3:"), "{e}");
}

#[test]
fn error_lines_count_blank_and_comment_lines() {
    // Issue: blank lines shifted the line numbers of errors found after parsing (here the
    // decreasing time on line 7 was reported as line 4).
    let text = "# recorded 2025-01-01\nt,x,y,z,buttons\n\n0,0,0,0,0\n# pause\n\n0.5,0,0,0,0\n0.25,0,0,0,0\n";
    let e = error(text);
    assert!(e.starts_with("t.csv:8: time 0.25 is not after"), "{e}");
    let e = error("t,x,y,z,buttons\n\n\n0,0,0,0,0\n\n0.1,0,0,0,x\n");
    assert!(e.starts_with("t.csv:6: buttons: `x`"), "{e}");
    let e = error("\n\n# only a comment\nt,x,y,z\n");
    assert!(e.starts_with("t.csv:4: header `t,x,y,z`"), "{e}");
    let t = Trajectory::parse(text.replace("0.25", "0.75").as_str(), "t.csv").unwrap();
    let times: Vec<f64> = t.samples().iter().map(|s| s.t).collect();
    assert_eq!(times, [0.0, 0.5, 0.75]);
}

#[test]
fn samples_built_in_code_are_checked_by_index() {
    let sample = |t: f64| TrajectorySample {
        t,
        position: Vec3::zeros(),
        buttons: 0,
        force: None,
    };
    let e = Trajectory::new(vec![sample(0.0), sample(1e300)], "gen")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("gen: sample 1: t: 1e300 s is outside"), "{e}");
    let e = Trajectory::new(vec![sample(0.0), sample(f64::NAN)], "gen")
        .unwrap_err()
        .to_string();
    assert!(e.contains("sample 1: non-finite value"), "{e}");
    assert!(Trajectory::new(vec![sample(0.0), sample(0.001)], "gen").is_ok());
}
