//! Agent images, built locally: no registry can be reached, so nothing is ever
//! pulled.
//!
//! The default agent image is assembled from this host's own files by a
//! declarative [`Recipe`] (`images/agent/recipe.toml`): a static busybox for
//! `sh` and the shell tools, git with its libraries and exec-path, a passwd entry
//! for the agent user. The root filesystem goes into a tar build context
//! (`FROM scratch` + `ADD rootfs.tar /`, which keeps the tar's owners, so the
//! home directory belongs to the agent), streamed into a build through the
//! Docker API ([`context_stream`]).
//! The tag is a hash of the recipe and of the resolved host inputs, so a second
//! build with nothing changed does no work; `<name>:latest` points at the newest
//! build and carries the recipe's hash as a label, which is what
//! [`DockerBackend::ensure_image`] checks without resolving anything.
//!
//! Any other image works too: a local one by name, or a project's Dockerfile
//! ([`dockerfile`]). berth does not depend on what it holds: the same recipe
//! assembles a host directory of berth's tools ([`tools`]) mounted read-only
//! at `/opt/berth`.

mod context_stream;
mod dockerfile;
mod dockerignore;
mod elf;
mod host_preset;
mod local;
mod recipe;
mod rootfs;
mod tools;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bollard::query_parameters::{BuildImageOptionsBuilder, TagImageOptionsBuilder};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

pub(crate) use context_stream::ContextBody;
pub use dockerfile::{BUILD_LABEL, BuildContext, DockerfileBuild, MAX_CONTEXT_BYTES};
pub use host_preset::{HostPreset, PRESET_BIN, PresetFiles};
pub use local::LocalImage;
pub(crate) use recipe::is_clean_absolute;
pub use recipe::{
    AllApplets, Applets, Busybox, DEFAULT_RECIPE, DEFAULT_RECIPE_PATH, GeneratedFile, HostEntry,
    HostInput, Recipe, User,
};
pub use rootfs::Rootfs;
pub(crate) use rootfs::hex;
pub use tools::{
    IMAGE_SHELL, TOOLS_BIN, TOOLS_DIR_ENV, TOOLS_GIT_EXEC_PATH, TOOLS_MOUNT, TOOLS_SHELL, ToolSet,
    ToolsSource, default_tools_root, ensure_tools, find_tools,
};

use crate::docker::{DockerBackend, DockerError, is_not_found};

/// Label on every image berth builds.
pub const IMAGE_LABEL: &str = "berth.image";
/// Label: hash of the recipe text an image was built from.
pub const RECIPE_LABEL: &str = "berth.recipe";
/// Label: the full fingerprint (recipe and host inputs).
pub const INPUTS_LABEL: &str = "berth.inputs";
/// Characters of the fingerprint used as the tag.
const TAG_HEX_LEN: usize = 16;
/// Lines of a failed build's log kept for its error.
const LOG_TAIL_LINES: usize = 60;

/// Which image a berth runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageRef {
    /// The default agent image from the compiled-in recipe (`berth image build`).
    DefaultAgent,
    /// Any image present in the local engine, by name or id.
    Named(String),
    /// A project's Dockerfile (`[sandbox.build]`): the image tagged with
    /// its context's hash, built first when there is none.
    Dockerfile(DockerfileBuild),
}

/// Errors of assembling, building or finding an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("reading the image recipe {path}: {source}")]
    ReadRecipe {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("image recipe {origin}: {message}")]
    InvalidRecipe { origin: String, message: String },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("image input {path}: {message}")]
    HostInput { path: PathBuf, message: String },
    #[error("[[host]] preset {preset:?}: {message}")]
    Preset {
        preset: &'static str,
        message: String,
    },
    #[error("building from {context}: {message}")]
    Dockerfile { context: PathBuf, message: String },
    #[error(
        "image {image} was not built by berth (no {IMAGE_LABEL} label): remove it with docker if you mean to"
    )]
    NotBerths { image: String },
    #[error("image {image} is in use (take its berths down first): {message}")]
    InUse { image: String, message: String },
    #[error(
        "image {image} is for {found} machines and this host is {host}: berth runs no emulation; build or load an image for {host}"
    )]
    Architecture {
        image: String,
        found: String,
        host: &'static str,
    },
    #[error("berth's tools at {path}: {message}")]
    Tools { path: PathBuf, message: String },
    #[error("image path {path} is claimed twice: {message}; fix the recipe")]
    Conflict { path: String, message: String },
    #[error("assembling the build context: {message}")]
    Context { message: String },
    #[error("building image {tag}: {message}")]
    BuildFailed { tag: String, message: String },
    #[error(
        "the default agent image {image} is not in the local Docker engine; run `berth image build` (no registry is reachable, images are built locally)"
    )]
    DefaultMissing { image: String },
    #[error(
        "the default agent image {image} was built from another recipe ({found}, this berth expects {expected}); run `berth image build`"
    )]
    DefaultStale {
        image: String,
        found: String,
        expected: String,
    },
    #[error(
        "image {image} is not in the local Docker engine and cannot be pulled (no registry is reachable); build or load it locally (`docker build`/`docker load`), or use the default agent image"
    )]
    Missing { image: String },
}

/// What a build reports as it goes; the CLI renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildEvent<'a> {
    /// The recipe was resolved against the host.
    Resolved {
        tag: &'a str,
        entries: usize,
        bytes: u64,
    },
    /// An image with this tag exists: nothing to build.
    UpToDate { tag: &'a str },
    /// The build context is ready to send.
    ContextReady { bytes: u64 },
    /// A line of the engine's build output (`Step 2/6 : ADD rootfs.tar /`).
    Step { line: &'a str },
    /// Built and tagged.
    Built {
        tag: &'a str,
        id: &'a str,
        elapsed: Duration,
    },
}

/// A receiver of [`BuildEvent`]s.
pub trait BuildProgress: Send {
    fn event(&mut self, event: BuildEvent<'_>);
}

impl<F: FnMut(BuildEvent<'_>) + Send> BuildProgress for F {
    fn event(&mut self, event: BuildEvent<'_>) {
        self(event)
    }
}

/// Discards progress.
pub struct NoProgress;

impl BuildProgress for NoProgress {
    fn event(&mut self, _: BuildEvent<'_>) {}
}

/// The result of [`DockerBackend::build_image`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    /// `<name>:<hash>`.
    pub tag: String,
    /// `<name>:latest`, pointing at the same image.
    pub latest: String,
    pub id: String,
    /// Nothing changed since the last build: no build ran.
    pub up_to_date: bool,
    pub entries: usize,
    pub bytes: u64,
}

/// A local image that a berth can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// The reference a container is created from.
    pub name: String,
    pub id: String,
    /// The image's own `PATH`, when its configuration sets one.
    pub path: Option<String>,
}

/// An image as a check found it a moment ago ([`SandboxProvider::check`](crate::provider::SandboxProvider::check)):
/// what bring-up uses instead of inspecting the same image again, when it
/// is the image its spec names. Not part of a container's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedImage {
    /// The reference that was checked.
    pub of: ImageRef,
    /// What the engine answered for it.
    pub found: ImageInfo,
}

/// This host's CPU as images name it (`amd64`, `arm64`, …).
fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The `PATH` an image's configuration sets.
fn image_path(found: &bollard::models::ImageInspect) -> Option<String> {
    found
        .config
        .as_ref()?
        .env
        .as_ref()?
        .iter()
        .find_map(|e| e.strip_prefix("PATH=").map(str::to_string))
}

impl Recipe {
    /// Hex SHA-256 of the recipe text (the `berth.recipe` label).
    pub fn text_hash(&self) -> String {
        rootfs::hex(&Sha256::digest(self.source.as_bytes()))
    }

    /// `<name>:latest`.
    pub fn latest(&self) -> String {
        format!("{}:latest", self.name)
    }
}

impl Rootfs {
    /// `<name>:<hash>` for this resolution of `recipe`.
    pub fn tag(&self, recipe: &Recipe) -> String {
        format!("{}:{}", recipe.name, &self.fingerprint[..TAG_HEX_LEN])
    }
}

impl DockerBackend {
    /// Builds the image of `recipe` unless an image with its tag exists.
    pub async fn build_image(
        &self,
        recipe: &Recipe,
        progress: &mut dyn BuildProgress,
    ) -> Result<BuiltImage, DockerError> {
        let started = Instant::now();
        let resolved = {
            let recipe = recipe.clone();
            tokio::task::spawn_blocking(move || Rootfs::resolve(&recipe))
                .await
                .map_err(|source| DockerError::Task {
                    op: "resolve the image recipe",
                    source,
                })??
        };
        let tag = resolved.tag(recipe);
        let (entries, bytes) = (resolved.len(), resolved.content_bytes());
        progress.event(BuildEvent::Resolved {
            tag: &tag,
            entries,
            bytes,
        });

        if let Some(id) = self.local_image_id(&tag).await? {
            self.tag_latest(&tag, recipe).await?;
            progress.event(BuildEvent::UpToDate { tag: &tag });
            return Ok(BuiltImage {
                latest: recipe.latest(),
                tag,
                id,
                up_to_date: true,
                entries,
                bytes,
            });
        }

        // Sized without reading a file, then streamed into the build.
        let (resolved, inner_len) = tokio::task::spawn_blocking(move || {
            let len = resolved.tar_len();
            (resolved, len)
        })
        .await
        .map_err(|source| DockerError::Task {
            op: "size the build context",
            source,
        })?;
        let context = context_stream::stream_context(dockerfile(recipe), resolved, inner_len?);
        progress.event(BuildEvent::ContextReady { bytes: context.len });

        let labels = HashMap::from([
            (IMAGE_LABEL.to_string(), recipe.name.clone()),
            (RECIPE_LABEL.to_string(), recipe.text_hash()),
            (
                INPUTS_LABEL.to_string(),
                tag.rsplit(':').next().unwrap_or_default().to_string(),
            ),
        ]);
        let options = BuildImageOptionsBuilder::default()
            .dockerfile("Dockerfile")
            .t(&tag)
            // A failed step otherwise leaves an unlabelled container behind.
            .rm(true)
            .forcerm(true)
            .labels(&labels)
            .build();
        let built = self.run_build(options, context.body, &tag, progress).await;
        // A host file that failed the writer is the cause; the engine's
        // complaint about a cut-off context only its consequence.
        if let Some(e) = context
            .writer
            .finish()
            .await
            .map_err(|source| DockerError::Task {
                op: "write the build context",
                source,
            })?
        {
            return Err(e.into());
        }
        let id = built?;
        self.tag_latest(&tag, recipe).await?;
        progress.event(BuildEvent::Built {
            tag: &tag,
            id: &id,
            elapsed: started.elapsed(),
        });
        Ok(BuiltImage {
            latest: recipe.latest(),
            tag,
            id,
            up_to_date: false,
            entries,
            bytes,
        })
    }

    /// Sends a build context to the engine and follows the build: each line
    /// of its output goes to `progress`; a failure carries the end of the
    /// log. The built image's id.
    pub(crate) async fn run_build(
        &self,
        options: bollard::query_parameters::BuildImageOptions,
        context: ContextBody,
        tag: &str,
        progress: &mut dyn BuildProgress,
    ) -> Result<String, DockerError> {
        let body = match context {
            ContextBody::Full(bytes) => bollard::body_full(bytes.into()),
            ContextBody::Stream(rx) => {
                bollard::body_try_stream(futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|item| (item, rx))
                }))
            }
        };
        let mut stream = self.docker().build_image(options, None, Some(body));
        let mut log: VecDeque<String> = VecDeque::new();
        let failed = |log: &VecDeque<String>, message: String| ImageError::BuildFailed {
            tag: tag.to_string(),
            message: if log.is_empty() {
                message
            } else {
                format!(
                    "{message}\n--- the end of the build log ---\n{}",
                    log.iter().cloned().collect::<Vec<_>>().join("\n")
                )
            },
        };
        let mut id = None;
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| failed(&log, e.to_string()))?;
            if let Some(text) = info.stream.as_deref() {
                for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    if log.len() == LOG_TAIL_LINES {
                        log.pop_front();
                    }
                    log.push_back(line.to_string());
                    progress.event(BuildEvent::Step { line });
                }
            }
            if let Some(detail) = info.error_detail {
                let message = detail.message.unwrap_or_else(|| "no message".to_string());
                return Err(failed(&log, message).into());
            }
            if let Some(aux) = info.aux
                && let Some(found) = aux.id
            {
                id = Some(found);
            }
        }
        match id {
            Some(id) => Ok(id),
            None => Ok(self
                .docker()
                .inspect_image(tag)
                .await
                .map_err(|source| DockerError::Api {
                    op: "inspect the built image",
                    target: tag.to_string(),
                    source,
                })?
                .id
                .unwrap_or_default()),
        }
    }

    async fn tag_latest(&self, tag: &str, recipe: &Recipe) -> Result<(), DockerError> {
        let options = TagImageOptionsBuilder::default()
            .repo(&recipe.name)
            .tag("latest")
            .build();
        self.docker()
            .tag_image(tag, Some(options))
            .await
            .map_err(|source| DockerError::Api {
                op: "tag image",
                target: tag.to_string(),
                source,
            })
    }

    /// Finds the image a berth would run, never pulling.
    ///
    /// The default agent image must exist as `berth-agent:latest` built from
    /// the compiled-in recipe; a named image must simply exist locally; a
    /// Dockerfile's image is built when its context changed.
    pub async fn ensure_image(&self, image: &ImageRef) -> Result<ImageInfo, DockerError> {
        match image {
            ImageRef::DefaultAgent => {
                let recipe = Recipe::default_agent()?;
                self.ensure_recipe_image(&recipe).await
            }
            ImageRef::Named(name) => self.find_local_image(name).await,
            ImageRef::Dockerfile(build) => {
                let built = self.build_dockerfile(build, &mut NoProgress).await?;
                self.find_local_image(&built.tag).await
            }
        }
    }

    /// The id of the local image `name`; `None` when there is none.
    pub(crate) async fn local_image_id(&self, name: &str) -> Result<Option<String>, DockerError> {
        match self.docker().inspect_image(name).await {
            Ok(found) => Ok(Some(found.id.unwrap_or_default())),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(source) => Err(DockerError::Api {
                op: "inspect image",
                target: name.to_string(),
                source,
            }),
        }
    }

    /// The local image `name`: never pulled.
    async fn find_local_image(&self, name: &str) -> Result<ImageInfo, DockerError> {
        match self.docker().inspect_image(name).await {
            Ok(found) => {
                // berth's tools, and the commands, run on this host's CPU.
                if let Some(arch) = found.architecture.as_deref()
                    && !arch.is_empty()
                    && arch != host_architecture()
                {
                    return Err(ImageError::Architecture {
                        image: name.to_string(),
                        found: arch.to_string(),
                        host: host_architecture(),
                    }
                    .into());
                }
                Ok(ImageInfo {
                    name: name.to_string(),
                    path: image_path(&found),
                    id: found.id.unwrap_or_default(),
                })
            }
            Err(e) if is_not_found(&e) => Err(ImageError::Missing {
                image: name.to_string(),
            }
            .into()),
            Err(source) => Err(DockerError::Api {
                op: "inspect image",
                target: name.to_string(),
                source,
            }),
        }
    }

    /// Finds `<recipe name>:latest` and checks it was built from `recipe`.
    pub async fn ensure_recipe_image(&self, recipe: &Recipe) -> Result<ImageInfo, DockerError> {
        let latest = recipe.latest();
        let found = match self.docker().inspect_image(&latest).await {
            Ok(found) => found,
            Err(e) if is_not_found(&e) => {
                return Err(ImageError::DefaultMissing { image: latest }.into());
            }
            Err(source) => {
                return Err(DockerError::Api {
                    op: "inspect image",
                    target: latest,
                    source,
                });
            }
        };
        let expected = recipe.text_hash();
        let label = found
            .config
            .as_ref()
            .and_then(|c| c.labels.as_ref())
            .and_then(|l| l.get(RECIPE_LABEL))
            .cloned()
            .unwrap_or_default();
        if label != expected {
            return Err(ImageError::DefaultStale {
                image: latest,
                found: if label.is_empty() {
                    "no recipe label".to_string()
                } else {
                    format!("recipe {}", &label[..label.len().min(12)])
                },
                expected: format!("recipe {}", &expected[..12]),
            }
            .into());
        }
        Ok(ImageInfo {
            name: latest,
            path: image_path(&found),
            id: found.id.unwrap_or_default(),
        })
    }
}

/// The recipe image's Dockerfile: the root filesystem, its environment and
/// user.
fn dockerfile(recipe: &Recipe) -> String {
    let mut d = String::from("FROM scratch\nADD rootfs.tar /\n");
    for (k, v) in &recipe.env {
        let v = v.replace('\\', "\\\\").replace('"', "\\\"");
        d.push_str(&format!("ENV {k}=\"{v}\"\n"));
    }
    d.push_str(&format!(
        "USER {}:{}\nWORKDIR {}\nCMD [\"sleep\", \"infinity\"]\n",
        recipe.user.uid, recipe.user.gid, recipe.user.home
    ));
    d
}
