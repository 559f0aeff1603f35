//! Whether the tests that need a Docker engine can run: they skip with the
//! reason without one, except under `CI=true`, where a missing engine fails
//! the run (never a silent skip). Also what removes an image a test made.

use std::process::Command;

pub fn docker_answers() -> bool {
    let ok = Command::new("docker")
        .args(["version", "--format", "{{.Server.APIVersion}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and the Docker engine does not answer, which fails the run (start dockerd)"
        );
        eprintln!("skipping: the Docker engine does not answer");
    }
    ok
}

/// A local image a test made (by tag or id); removed, with what it holds,
/// when dropped.
pub struct RemoveImage(pub String);

impl Drop for RemoveImage {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}
