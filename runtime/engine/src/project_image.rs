//! The image a project's mounted berths run, from its `[sandbox]` settings:
//! the default agent image, a local image by name, or the image of its
//! Dockerfile (`[sandbox.build]`) — else its `devcontainer.json`'s image
//! (`image`, or the image built from its `build`). Whatever the image holds,
//! berth injects its own tools, so this is only about which image.

use std::path::{Path, PathBuf};

use berth_sandbox::image::{DockerfileBuild, ImageRef};

use crate::config::ProjectConfig;

/// The repository of every image built from a project's Dockerfile; the tag
/// is the hash of its context, so projects with the same context share one.
pub const BUILD_REPOSITORY: &str = "berth-build";

/// The image `config` names.
pub fn image_ref(config: &ProjectConfig) -> ImageRef {
    let s = &config.sandbox;
    if s.build.is_set() {
        return ImageRef::Dockerfile(DockerfileBuild {
            name: BUILD_REPOSITORY.to_string(),
            context: PathBuf::from(s.build.context.trim()),
            dockerfile: s.build.dockerfile.clone(),
            args: s.build.args.clone(),
        });
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

/// Why the build context must not be read: it lies in berth's state
/// directory, where agents' worktrees are (configuration is never read from
/// where an agent writes). `None` when it may be.
pub fn context_problem(config: &ProjectConfig, state: &Path) -> Option<String> {
    let b = &config.sandbox.build;
    if !b.is_set() {
        return None;
    }
    let context = Path::new(b.context.trim());
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
            ("[sandbox.build]\ncontext = \"ctx\"\n", "absolute"),
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
    }
}
