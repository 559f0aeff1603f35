//! Agent images, built locally: no registry can be reached, so nothing is ever
//! pulled.
//!
//! The default agent image is assembled from this host's own files by a
//! declarative [`Recipe`] (`images/agent/recipe.toml`): a static busybox for
//! `sh` and the shell tools, git with its libraries and exec-path, a passwd entry
//! for the agent user. The root filesystem goes into an in-memory tar build
//! context (`FROM scratch` + `ADD rootfs.tar /`, which keeps the tar's owners, so
//! the home directory belongs to the agent) and is built through the Docker API.
//! The tag is a hash of the recipe and of the resolved host inputs, so a second
//! build with nothing changed does no work; `<name>:latest` points at the newest
//! build and carries the recipe's hash as a label, which is what
//! [`DockerBackend::ensure_image`] checks without resolving anything.

mod recipe;
mod rootfs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bollard::query_parameters::{BuildImageOptionsBuilder, TagImageOptionsBuilder};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

pub(crate) use recipe::is_clean_absolute;
pub use recipe::{
    AllApplets, Applets, Busybox, DEFAULT_RECIPE, DEFAULT_RECIPE_PATH, GeneratedFile, HostInput,
    Recipe, User,
};
pub use rootfs::Rootfs;
pub(crate) use rootfs::hex;

use crate::docker::{DockerBackend, DockerError, is_not_found};

/// Label on every image berth builds.
pub const IMAGE_LABEL: &str = "berth.image";
/// Label: hash of the recipe text an image was built from.
pub const RECIPE_LABEL: &str = "berth.recipe";
/// Label: the full fingerprint (recipe and host inputs).
pub const INPUTS_LABEL: &str = "berth.inputs";
/// Characters of the fingerprint used as the tag.
const TAG_HEX_LEN: usize = 16;

/// Which image a berth runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageRef {
    /// The default agent image from the compiled-in recipe (`berth image build`).
    DefaultAgent,
    /// Any image present in the local engine, by name or id.
    Named(String),
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

        match self.docker().inspect_image(&tag).await {
            Ok(found) => {
                let id = found.id.unwrap_or_default();
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
            Err(e) if is_not_found(&e) => {}
            Err(source) => {
                return Err(DockerError::Api {
                    op: "inspect image",
                    target: tag,
                    source,
                });
            }
        }

        let context = {
            let recipe = recipe.clone();
            tokio::task::spawn_blocking(move || build_context(&recipe, &resolved))
                .await
                .map_err(|source| DockerError::Task {
                    op: "assemble the build context",
                    source,
                })??
        };
        progress.event(BuildEvent::ContextReady {
            bytes: context.len() as u64,
        });

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
        let mut stream =
            self.docker()
                .build_image(options, None, Some(bollard::body_full(context.into())));
        let mut id = None;
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| ImageError::BuildFailed {
                tag: tag.clone(),
                message: e.to_string(),
            })?;
            if let Some(detail) = info.error_detail {
                return Err(ImageError::BuildFailed {
                    tag: tag.clone(),
                    message: detail.message.unwrap_or_else(|| "no message".to_string()),
                }
                .into());
            }
            if let Some(line) = info.stream.as_deref() {
                let line = line.trim();
                if !line.is_empty() {
                    progress.event(BuildEvent::Step { line });
                }
            }
            if let Some(aux) = info.aux
                && let Some(found) = aux.id
            {
                id = Some(found);
            }
        }
        let id = match id {
            Some(id) => id,
            None => self
                .docker()
                .inspect_image(&tag)
                .await
                .map_err(|source| DockerError::Api {
                    op: "inspect the built image",
                    target: tag.clone(),
                    source,
                })?
                .id
                .unwrap_or_default(),
        };
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

    /// Finds the image a berth would run, without pulling or building.
    ///
    /// The default agent image must exist as `berth-agent:latest` built from
    /// the compiled-in recipe; any other image must simply exist locally.
    pub async fn ensure_image(&self, image: &ImageRef) -> Result<ImageInfo, DockerError> {
        match image {
            ImageRef::DefaultAgent => {
                let recipe = Recipe::default_agent()?;
                self.ensure_recipe_image(&recipe).await
            }
            ImageRef::Named(name) => match self.docker().inspect_image(name).await {
                Ok(found) => Ok(ImageInfo {
                    name: name.clone(),
                    path: image_path(&found),
                    id: found.id.unwrap_or_default(),
                }),
                Err(e) if is_not_found(&e) => Err(ImageError::Missing {
                    image: name.clone(),
                }
                .into()),
                Err(source) => Err(DockerError::Api {
                    op: "inspect image",
                    target: name.clone(),
                    source,
                }),
            },
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

/// The build context: a Dockerfile and the root filesystem as a nested tar.
fn build_context(recipe: &Recipe, rootfs: &Rootfs) -> Result<Vec<u8>, ImageError> {
    let inner = rootfs.write_tar()?;
    let dockerfile = dockerfile(recipe);
    let mut b = tar::Builder::new(Vec::with_capacity(inner.len() + 4096));
    for (name, data) in [
        ("Dockerfile", dockerfile.as_bytes()),
        ("rootfs.tar", inner.as_slice()),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(data.len() as u64);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, name, data)
            .map_err(|e| ImageError::Context {
                message: format!("adding {name}: {e}"),
            })?;
    }
    b.into_inner().map_err(|e| ImageError::Context {
        message: format!("finishing the archive: {e}"),
    })
}

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
