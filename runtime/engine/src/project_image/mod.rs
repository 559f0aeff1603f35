//! The image a project's mounted berths run, from its `[sandbox]` settings:
//! the default agent image, a local image by name, or the image of its
//! Dockerfile (`[sandbox.build]`) — else its `devcontainer.json`'s image
//! (`image`, or the image built from its `build`). Whatever the image holds,
//! berth injects its own tools, so this is only about which image.
//!
//! A Dockerfile's context is a directory of the project's base branch in the
//! forge ([`base_branch`]): `berth image build --project P` checks it out and
//! builds it, and records the image; `berth up` runs the recorded image.
//! An absolute host path still names a context read at each build
//! (deprecated: nothing but its place outside berth's state keeps an agent
//! from writing it).

mod base_branch;

use std::path::Path;

use berth_sandbox::image::{DockerfileBuild, ImageRef};

pub use base_branch::{BaseBranchBuild, BuildRecord, ProjectImageError, load_record, record_path};

use crate::config::{BuildSource, ProjectConfig};

/// The repository of every image built from a project's Dockerfile; the tag
/// is the hash of its context, so projects with the same context share one.
pub const BUILD_REPOSITORY: &str = "berth-build";

/// The image `config` names.
pub fn image_ref(config: &ProjectConfig) -> ImageRef {
    let s = &config.sandbox;
    match s.build.source() {
        Some(BuildSource::HostPath(context)) => {
            return ImageRef::Dockerfile(DockerfileBuild {
                name: BUILD_REPOSITORY.to_string(),
                context,
                dockerfile: s.build.dockerfile.clone(),
                args: s.build.args.clone(),
            });
        }
        // The image `berth image build --project P` recorded for these
        // settings; not built yet: `up` says so first ([`build_problem`]),
        // and this names no image at all, never another one.
        Some(BuildSource::BaseBranch(_)) => {
            return ImageRef::Named(
                config
                    .dockerfile_image
                    .as_ref()
                    .filter(|r| r.matches(&s.build))
                    .map(|r| r.tag.clone())
                    .unwrap_or_else(|| format!("{BUILD_REPOSITORY}:dockerfile-not-built")),
            );
        }
        None => {}
    }
    if let Some(name) = Some(s.image.trim()).filter(|n| !n.is_empty()) {
        return ImageRef::Named(name.to_string());
    }
    use crate::devcontainer::DevImage;
    match config.devcontainer.as_ref().map(|d| &d.image) {
        Some(DevImage::Named { name }) => ImageRef::Named(name.clone()),
        Some(DevImage::Build {
            built: Some(tag), ..
        }) => ImageRef::Named(tag.clone()),
        // Not built yet: `up` says so first ([`crate::devcontainer::image_problem`]);
        // a name no image has, never another image.
        Some(DevImage::Build { built: None, .. }) => {
            ImageRef::Named(format!("{BUILD_REPOSITORY}:devcontainer-not-built"))
        }
        Some(DevImage::None | DevImage::Overridden) | None => ImageRef::DefaultAgent,
    }
}

/// Why the project's Dockerfile image cannot be used yet: its context is
/// on the base branch and no image was built for its current
/// `[sandbox.build]` settings. `None` otherwise.
pub fn build_problem(project: &str, config: &ProjectConfig) -> Option<ProjectImageError> {
    let b = &config.sandbox.build;
    let Some(BuildSource::BaseBranch(dir)) = b.source() else {
        return None;
    };
    match &config.dockerfile_image {
        Some(r) if r.matches(b) => None,
        recorded => Some(ProjectImageError::NotBuilt {
            project: project.to_string(),
            context: base_branch::shown_dir(&dir),
            dockerfile: b.dockerfile.clone(),
            changed: recorded.is_some(),
        }),
    }
}

/// Why a host-path build context must not be read: it lies in berth's state
/// directory, where agents' worktrees are (configuration is never read from
/// where an agent writes). `None` when it may be (and for a context on the
/// base branch, which is read from the forge).
pub fn context_problem(config: &ProjectConfig, state: &Path) -> Option<String> {
    let Some(BuildSource::HostPath(context)) = config.sandbox.build.source() else {
        return None;
    };
    let context = context.as_path();
    let real = std::fs::canonicalize(context).unwrap_or_else(|_| context.to_path_buf());
    let state = std::fs::canonicalize(state).unwrap_or_else(|_| state.to_path_buf());
    (real.starts_with(&state) || state.starts_with(&real)).then(|| {
        format!(
            "the build context {} is inside berth's state {} (or holds it), where agents write; keep the Dockerfile and its context elsewhere",
            context.display(),
            state.display()
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_config_names_one_image() {
        let parse = |t: &str| ProjectConfig::parse(t, "berth.toml");
        assert_eq!(image_ref(&parse("").unwrap()), ImageRef::DefaultAgent);
        assert_eq!(
            image_ref(&parse("[sandbox]\nimage = \"python:3\"\n").unwrap()),
            ImageRef::Named("python:3".into())
        );
        let built = parse(
            "[sandbox.build]\ncontext = \"/srv/ctx\"\ndockerfile = \"docker/Dev\"\nargs = { V = \"1\" }\n",
        )
        .unwrap();
        match image_ref(&built) {
            ImageRef::Dockerfile(b) => {
                assert_eq!(b.context, PathBuf::from("/srv/ctx"));
                assert_eq!(b.dockerfile, "docker/Dev");
                assert_eq!(b.args.get("V").map(String::as_str), Some("1"));
                assert_eq!(b.name, BUILD_REPOSITORY);
            }
            other => panic!("{other:?}"),
        }
        for (text, want) in [
            (
                "[sandbox]\nimage = \"x\"\n[sandbox.build]\ncontext = \"/c\"\n",
                "both name the image",
            ),
            ("[sandbox.build]\ncontext = \"a/../b\"\n", "without '..'"),
            (
                "[sandbox.build]\ncontext = \"/c\"\ndockerfile = \"../D\"\n",
                "without '..'",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains(want) && err.contains("sandbox.build"),
                "{text}: {err}"
            );
        }
        assert!(context_problem(&built, Path::new("/var/lib/berth")).is_none());
        assert!(context_problem(&built, Path::new("/srv")).is_some());
        assert!(built.warnings.iter().any(|w| w.contains("deprecated")));
        assert!(build_problem("p", &built).is_none());
    }

    #[test]
    fn a_context_on_the_base_branch_runs_the_image_recorded_for_it() {
        let parse = |t: &str| ProjectConfig::parse(t, "berth.toml").unwrap();
        let mut config = parse("[sandbox.build]\ncontext = \"docker\"\n");
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        assert_eq!(
            config.sandbox.build.source(),
            Some(BuildSource::BaseBranch("docker".into()))
        );
        for root in [".", "./"] {
            let c = parse(&format!("[sandbox.build]\ncontext = \"{root}\"\n"));
            assert_eq!(
                c.sandbox.build.source(),
                Some(BuildSource::BaseBranch(String::new()))
            );
        }
        // Nothing recorded: no image (and the reason, naming the command).
        let ImageRef::Named(none) = image_ref(&config) else {
            panic!()
        };
        assert!(none.ends_with("dockerfile-not-built"), "{none}");
        let why = build_problem("web", &config).unwrap().to_string();
        assert!(
            why.contains("berth image build --project web") && why.contains("docker/Dockerfile"),
            "{why}"
        );
        let record = BuildRecord {
            branch: "main".into(),
            commit: "c".repeat(40),
            context: "docker".into(),
            tree: "t".repeat(40),
            dockerfile: "Dockerfile".into(),
            args: Default::default(),
            tag: "berth-build:0123".into(),
        };
        config.dockerfile_image = Some(record.clone());
        assert_eq!(
            image_ref(&config),
            ImageRef::Named("berth-build:0123".into())
        );
        assert!(build_problem("web", &config).is_none());
        // Other settings than the image was built for: built again first.
        config.sandbox.build.args.insert("V".into(), "2".into());
        assert!(image_ref(&config) != ImageRef::Named("berth-build:0123".into()));
        let why = build_problem("web", &config).unwrap().to_string();
        assert!(why.contains("changed since"), "{why}");
    }
}
