//! A long-lived engine's projects' files, parsed once and read again only
//! when one of them changed (`berth serve`, the MCP server, the noop loop:
//! every decision loads its project's `berth.toml` and `permissions.json`,
//! and parsing the commented `berth.toml` was half of what the engine did
//! per action in process).
//!
//! A load is reused only while every file it read is the one it read: the
//! same (device, inode, size, modification and change times) from `stat`,
//! a missing file still missing. A file whose change time is not older
//! than [`SETTLED`] at the load is never trusted this way (git's "racily
//! clean" rule): a write in the same clock tick as the load, leaving size
//! and times alike, could otherwise go unseen for ever. Any later write
//! sets the change time to its own moment, which no `utimensat` can undo,
//! so a reused load is always the files as they are. A failed load is
//! never kept: the next decision reads the files and fails again, naming
//! the line.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::config::ProjectConfig;
use crate::error::Result;
use crate::state::StateDir;

/// How old a file's last change must be for a load of it to be kept.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);

/// One file as `stat` saw it; `None`: absent (or unreadable, which the
/// load itself reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp(Option<(u64, u64, u64, i64, i64, i64, i64)>);

impl Stamp {
    fn of(path: &Path) -> Stamp {
        Stamp(std::fs::metadata(path).ok().map(|m| {
            (
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            )
        }))
    }

    /// Changed at least [`SETTLED`] before `now` (absent counts as settled:
    /// its appearance is a new stamp).
    fn settled(&self, now: SystemTime) -> bool {
        let Some((.., ctime, ctime_nsec)) = self.0 else {
            return true;
        };
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let changed = Duration::new(
            u64::try_from(ctime).unwrap_or(u64::MAX),
            u32::try_from(ctime_nsec).unwrap_or(0),
        );
        changed.saturating_add(SETTLED) <= now
    }
}

struct Kept {
    stamps: [Stamp; 4],
    config: ProjectConfig,
    rules: berth_policy::RuleSet,
}

/// Each project's last settled load, by project name.
pub(crate) struct ProjectFilesCache {
    kept: Mutex<HashMap<String, Kept>>,
    /// False in a process that runs one command: it would only pay the
    /// stamps and a copy of each load for no later decision.
    keeps: bool,
}

impl Default for ProjectFilesCache {
    fn default() -> Self {
        ProjectFilesCache {
            kept: Mutex::default(),
            keeps: true,
        }
    }
}

impl ProjectFilesCache {
    /// A cache that keeps nothing: every load reads the files.
    pub(crate) fn one_shot() -> Self {
        ProjectFilesCache {
            kept: Mutex::default(),
            keeps: false,
        }
    }

    /// `project`'s configuration and rules, as [`crate::projects::project_files`]
    /// reads them: the kept load when no file changed, else a fresh one
    /// (kept when its files have settled).
    pub(crate) fn load(
        &self,
        state: &StateDir,
        project: &str,
    ) -> Result<(ProjectConfig, berth_policy::RuleSet)> {
        if !self.keeps {
            return crate::projects::project_files(state, project);
        }
        let now = SystemTime::now();
        let stamps = crate::projects::project_file_paths(state, project).map(|p| Stamp::of(&p));
        if let Ok(kept) = self.kept.lock()
            && let Some(k) = kept.get(project)
            && k.stamps == stamps
        {
            return Ok((k.config.clone(), k.rules.clone()));
        }
        let (config, rules) = crate::projects::project_files(state, project)?;
        // Stamped before the read: a write during it makes the next
        // decision's stamps differ, and reads again.
        if stamps.iter().all(|s| s.settled(now))
            && let Ok(mut kept) = self.kept.lock()
        {
            kept.insert(
                project.to_string(),
                Kept {
                    stamps,
                    config: config.clone(),
                    rules: rules.clone(),
                },
            );
        }
        Ok((config, rules))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_change_just_now_is_not_settled_and_an_old_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("berth.toml");
        std::fs::write(&path, "x").unwrap();
        let stamp = Stamp::of(&path);
        let now = SystemTime::now();
        assert!(!stamp.settled(now), "written this instant: {stamp:?}");
        assert!(stamp.settled(now + SETTLED + Duration::from_millis(10)));
        assert!(Stamp::of(&dir.path().join("absent")).settled(now));
    }

    #[test]
    fn any_write_changes_the_stamp_even_with_the_same_size_and_mtime() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("permissions.json");
        std::fs::write(&path, "{\"a\":1}").unwrap();
        let before = Stamp::of(&path);
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&path, "{\"a\":2}").unwrap();
        // The modification time put back as it was: the change time still
        // moves (no call sets it), so the stamp differs.
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(modified).unwrap();
        let after = Stamp::of(&path);
        let (b, a) = (before.0.unwrap(), after.0.unwrap());
        assert_eq!((b.2, b.3, b.4), (a.2, a.3, a.4), "same size and mtime");
        assert_ne!(before, after);
        // Replaced by a rename: another inode.
        let other = dir.path().join("new.json");
        std::fs::write(&other, "{\"a\":1}").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(after, Stamp::of(&path));
    }

    /// Each file the stamps cover is one the load reads: broken, it fails
    /// the load.
    #[test]
    fn every_stamped_file_is_read_by_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        std::fs::create_dir_all(state.project_dir("p")).unwrap();
        std::fs::write(state.project_config("p"), "").unwrap();
        crate::projects::project_files(&state, "p").unwrap();
        for path in crate::projects::project_file_paths(&state, "p") {
            let before = std::fs::read(&path).ok();
            std::fs::write(&path, "{").unwrap();
            assert!(
                crate::projects::project_files(&state, "p").is_err(),
                "{} broken, and the load did not read it",
                path.display()
            );
            match before {
                Some(bytes) => std::fs::write(&path, bytes).unwrap(),
                None => std::fs::remove_file(&path).unwrap(),
            }
        }
        crate::projects::project_files(&state, "p").unwrap();
    }

    fn rules_file(allow: &str) -> String {
        format!("{{\"allow\": [\"{allow}\"], \"ask\": [], \"deny\": []}}")
    }

    /// The rules' first command rule, as loaded.
    fn first_rule(loaded: &(ProjectConfig, berth_policy::RuleSet)) -> String {
        format!("{:?}", loaded.1.commands.first())
    }

    #[test]
    fn a_settled_load_is_kept_until_one_of_its_files_changes() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        std::fs::create_dir_all(state.project_dir("p")).unwrap();
        std::fs::write(state.project_config("p"), "").unwrap();
        std::fs::write(state.project_rules("p"), rules_file("ls")).unwrap();
        let cache = ProjectFilesCache::default();

        // Just written: loaded, not kept.
        let fresh = cache.load(&state, "p").unwrap();
        assert!(first_rule(&fresh).contains("ls"), "{}", first_rule(&fresh));
        assert!(cache.kept.lock().unwrap().is_empty());

        std::thread::sleep(SETTLED + Duration::from_millis(100));
        let settled = cache.load(&state, "p").unwrap();
        assert_eq!(first_rule(&settled), first_rule(&fresh));
        assert!(
            cache.kept.lock().unwrap().contains_key("p"),
            "settled: kept"
        );
        // A one-shot process's cache keeps nothing, settled or not.
        let one_shot = ProjectFilesCache::one_shot();
        assert_eq!(one_shot.load(&state, "p").unwrap().1, settled.1);
        assert!(one_shot.kept.lock().unwrap().is_empty());
        assert_eq!(cache.load(&state, "p").unwrap().1, settled.1);

        // Rewritten, same length: the next load reads it.
        std::fs::write(state.project_rules("p"), rules_file("wc")).unwrap();
        let changed = cache.load(&state, "p").unwrap();
        assert!(
            first_rule(&changed).contains("wc"),
            "{}",
            first_rule(&changed)
        );

        // A file that appears (the devcontainer snapshot, broken) is read:
        // its error, not the kept load.
        std::fs::write(crate::devcontainer::snapshot_path(&state, "p"), "{").unwrap();
        assert!(cache.load(&state, "p").is_err());
        // A broken berth.toml fails every load until it is mended.
        std::fs::remove_file(crate::devcontainer::snapshot_path(&state, "p")).unwrap();
        std::fs::write(state.project_config("p"), "[execution\n").unwrap();
        assert!(cache.load(&state, "p").is_err());
        assert!(cache.load(&state, "p").is_err());
        std::fs::write(state.project_config("p"), "").unwrap();
        assert!(cache.load(&state, "p").is_ok());
    }
}
