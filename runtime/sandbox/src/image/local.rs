//! The images berth built that the local engine holds (every one carries the
//! `berth.image` label): listing them for `berth image ls` and removing one
//! for `berth image rm`. An image berth did not build is never removed.

use std::collections::HashMap;

use bollard::query_parameters::{ListImagesOptionsBuilder, RemoveImageOptionsBuilder};

use super::{BUILD_LABEL, IMAGE_LABEL, ImageError, RECIPE_LABEL};
use crate::docker::{DockerBackend, DockerError, is_conflict, is_not_found};

/// One image berth built.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocalImage {
    pub id: String,
    /// `repo:tag` names; empty for an image whose tags moved on.
    pub tags: Vec<String>,
    /// Its repository as berth named it (`berth-agent`, `berth-build`).
    pub name: String,
    /// `recipe` (assembled from this host) or `dockerfile`.
    pub source: &'static str,
    /// Seconds since the epoch.
    pub created: i64,
    pub bytes: i64,
}

impl DockerBackend {
    /// Every image berth built, newest first.
    pub async fn list_berth_images(&self) -> Result<Vec<LocalImage>, DockerError> {
        let filters = HashMap::from([("label".to_string(), vec![IMAGE_LABEL.to_string()])]);
        let options = ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker()
            .list_images(Some(options))
            .await
            .map_err(|source| DockerError::Api {
                op: "list images",
                target: format!("labelled {IMAGE_LABEL}"),
                source,
            })?;
        let mut images: Vec<LocalImage> = list
            .into_iter()
            .map(|i| LocalImage {
                name: i.labels.get(IMAGE_LABEL).cloned().unwrap_or_default(),
                source: if i.labels.contains_key(BUILD_LABEL) {
                    "dockerfile"
                } else if i.labels.contains_key(RECIPE_LABEL) {
                    "recipe"
                } else {
                    "unknown"
                },
                id: i.id,
                tags: i
                    .repo_tags
                    .into_iter()
                    .filter(|t| t != "<none>:<none>")
                    .collect(),
                created: i.created,
                bytes: i.size,
            })
            .collect();
        images.sort_by(|a, b| b.created.cmp(&a.created).then(a.id.cmp(&b.id)));
        Ok(images)
    }

    /// Removes `reference` (a tag or an id) if berth built it; the names
    /// and layers the engine reports as untagged or deleted. A berth's
    /// container still using it keeps it (take the berth down first).
    pub async fn remove_berth_image(&self, reference: &str) -> Result<Vec<String>, DockerError> {
        let found = match self.docker().inspect_image(reference).await {
            Ok(found) => found,
            Err(e) if is_not_found(&e) => {
                return Err(ImageError::Missing {
                    image: reference.to_string(),
                }
                .into());
            }
            Err(source) => {
                return Err(DockerError::Api {
                    op: "inspect image",
                    target: reference.to_string(),
                    source,
                });
            }
        };
        let ours = found
            .config
            .as_ref()
            .and_then(|c| c.labels.as_ref())
            .is_some_and(|l| l.contains_key(IMAGE_LABEL));
        if !ours {
            return Err(ImageError::NotBerths {
                image: reference.to_string(),
            }
            .into());
        }
        let options = RemoveImageOptionsBuilder::default().force(false).build();
        match self
            .docker()
            .remove_image(reference, Some(options), None)
            .await
        {
            Ok(items) => Ok(items
                .into_iter()
                .flat_map(|i| i.untagged.into_iter().chain(i.deleted))
                .collect()),
            Err(e) if is_conflict(&e) => Err(ImageError::InUse {
                image: reference.to_string(),
                message: e.to_string(),
            }
            .into()),
            Err(source) => Err(DockerError::Api {
                op: "remove image",
                target: reference.to_string(),
                source,
            }),
        }
    }
}
