//! The host's record of the container berth made for a berth, so that
//! [`DockerBerth::attach`](super::DockerBerth::attach) can exec straight into
//! it without asking Docker first.
//!
//! Re-running `up` on every exec cost an image inspect, a container inspect
//! and the spec's validation per command. Instead, `up` (and every recreate)
//! writes the key of the container it left running — a hash of the container
//! configuration for the spec and the access `/work` has — into the berth's
//! private identity directory (berth's own state, never mounted whole). An
//! attach whose spec gives the same key trusts the record: same limits,
//! mounts, network, uid and access, so nothing about the container needs
//! checking; an exec that then finds the container gone (404) brings it up
//! again. A different key (the project's `[sandbox]` changed) or no record
//! sends the caller through `up`, as before. What the key cannot see is a
//! rebuilt image: the berth keeps the image it has until its next `up`.
//!
//! The record is pessimistic: it is removed before a container is replaced
//! and written only once the new one runs, so a crash in between leaves no
//! record and the next process brings the berth up.

use std::path::PathBuf;

use super::{ContainerSpec, SPEC_LABEL};
use crate::WorkAccess;
use crate::image::{ImageInfo, ImageRef};

/// The record's file in the spec's identity directory.
const RECORD_FILE: &str = "container";

impl ContainerSpec {
    fn record_path(&self) -> Option<PathBuf> {
        self.identity_dir.as_ref().map(|d| d.join(RECORD_FILE))
    }

    /// The key of the container this spec makes with `/work` as `access`:
    /// its configuration's hash, with the image as the spec names it (the
    /// image is resolved only by `up`).
    fn container_key(&self, access: WorkAccess) -> String {
        let named = ImageInfo {
            name: match &self.image {
                ImageRef::DefaultAgent => String::new(),
                ImageRef::Named(n) => n.clone(),
                ImageRef::Dockerfile(b) => format!("{} {}", b.name, b.context.display()),
            },
            id: String::new(),
            // The image's own PATH is read by `up` alone; the key leaves it
            // out on both sides (record and attach), as it does the id.
            path: None,
        };
        // The tool set's directory changes with berth-helper's build; the key
        // names only whether there is one.
        let tools = self
            .mounts_tools()
            .then(|| std::path::Path::new(crate::image::TOOLS_MOUNT));
        self.container_body(&named, access, tools)
            .labels
            .and_then(|mut l| l.remove(SPEC_LABEL))
            .unwrap_or_default()
    }

    /// The access of the recorded container when the record matches this
    /// spec; `None` without a record, or when the spec changed since.
    pub(crate) fn recorded_access(&self) -> Option<WorkAccess> {
        let recorded = std::fs::read_to_string(self.record_path()?).ok()?;
        let recorded = recorded.trim();
        [WorkAccess::ReadWrite, WorkAccess::ReadOnly]
            .into_iter()
            .find(|&access| self.container_key(access) == recorded)
    }

    /// Records that the container runs for this spec with `/work` as
    /// `access`. Best effort: without a record the next process goes
    /// through `up`, which is only slower.
    pub(crate) fn record_container(&self, access: WorkAccess) {
        let Some(path) = self.record_path() else {
            return;
        };
        let tmp = path.with_file_name(format!(".{RECORD_FILE}.new"));
        let written = std::fs::write(&tmp, self.container_key(access))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "recording the berth container failed");
        }
    }

    /// Forgets the record, before the container is replaced or removed.
    pub(crate) fn forget_container(&self) {
        let Some(path) = self.record_path() else {
            return;
        };
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "forgetting the berth container failed")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_record_matches_only_the_spec_and_access_it_was_written_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = ContainerSpec::new("p", "a", "/w", "/r", "/f");
        spec.identity_dir = Some(dir.path().to_path_buf());
        assert_eq!(spec.recorded_access(), None, "no record yet");
        spec.record_container(WorkAccess::ReadOnly);
        assert_eq!(spec.recorded_access(), Some(WorkAccess::ReadOnly));
        spec.record_container(WorkAccess::ReadWrite);
        assert_eq!(spec.recorded_access(), Some(WorkAccess::ReadWrite));
        let mut changed = spec.clone();
        changed.limits.pids += 1;
        assert_eq!(changed.recorded_access(), None, "the limits changed");
        let mut other_image = spec.clone();
        other_image.image = ImageRef::Named("alpine".into());
        assert_eq!(other_image.recorded_access(), None, "another image");
        spec.forget_container();
        assert_eq!(spec.recorded_access(), None);
        spec.forget_container();
        let mut nowhere = spec.clone();
        nowhere.identity_dir = None;
        nowhere.record_container(WorkAccess::ReadWrite);
        assert_eq!(nowhere.recorded_access(), None);
    }
}
