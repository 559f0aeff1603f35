//! A project's own image from a Dockerfile (`[sandbox.build]`), built by the
//! local engine with no network and no registry.
//!
//! berth tars the context itself, from directory descriptors opened with
//! `O_NOFOLLOW` one level at a time, so a symlink in the context travels as a
//! symlink and nothing outside the context is ever read; what its
//! `.dockerignore` names is left out ([`super::dockerignore`]). Every entry gets
//! owner 0 and mtime 0, so the tar — and the hash of it, the Dockerfile's
//! path and the build arguments, which tags the image — depends on content
//! alone: the image is rebuilt only when one of those changes. The Dockerfile
//! is checked before anything is sent: an `ADD` of a URL or a git repository
//! is refused (a build fetches nothing), and every `FROM` must name an image
//! already in the engine (nothing is pulled). Steps run with `networkmode =
//! "none"`; a failed build reports the end of its log.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bollard::query_parameters::BuildImageOptionsBuilder;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use sha2::{Digest, Sha256};

use super::dockerignore::Ignore;
use super::{BuildEvent, BuildProgress, BuiltImage, IMAGE_LABEL, ImageError, hex};
use crate::docker::{DockerBackend, DockerError};

/// Label: the hash of the context, Dockerfile path and arguments.
pub const BUILD_LABEL: &str = "berth.build";
/// The largest context berth sends (it is held in memory).
pub const MAX_CONTEXT_BYTES: u64 = 1 << 30;
/// Hex characters of the hash used as the tag.
const TAG_HEX_LEN: usize = 16;

/// What to build: `[sandbox.build]` resolved to host paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerfileBuild {
    /// The image's repository name; the tag is the hash.
    pub name: String,
    /// The context directory on the host.
    pub context: PathBuf,
    /// The Dockerfile's path inside the context (`Dockerfile`).
    pub dockerfile: String,
    /// Build arguments (`ARG`s).
    pub args: BTreeMap<String, String>,
}

/// A context tarred and hashed.
#[derive(Debug, Clone)]
pub struct BuildContext {
    pub tar: Vec<u8>,
    /// `<name>:<hash>`.
    pub tag: String,
    pub hash: String,
    /// The Dockerfile's text.
    pub dockerfile: String,
}

impl DockerfileBuild {
    fn invalid(&self, message: impl Into<String>) -> ImageError {
        ImageError::Dockerfile {
            context: self.context.clone(),
            message: message.into(),
        }
    }

    /// Tars the context, checks the Dockerfile and hashes it all. Blocking.
    pub fn prepare(&self) -> Result<BuildContext, ImageError> {
        if !super::recipe::is_repository_name(&self.name) {
            return Err(self.invalid(format!(
                "image name {:?} is not a repository name",
                self.name
            )));
        }
        let rel = Path::new(&self.dockerfile);
        if self.dockerfile.is_empty()
            || rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(self.invalid(format!(
                "dockerfile {:?}: a relative path inside the context, without '..'",
                self.dockerfile
            )));
        }
        let root = rustix::fs::open(
            &self.context,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.invalid(format!("opening the context: {e}")))?;
        let ignore = match read_beneath(&root, DOCKERIGNORE) {
            Ok(Some(text)) => Ignore::parse(&String::from_utf8_lossy(&text)),
            Ok(None) => Ignore::default(),
            Err(e) => return Err(self.invalid(format!("{DOCKERIGNORE}: {e}"))),
        };
        let mut walk = ContextTar {
            tar: tar::Builder::new(Vec::new()),
            bytes: 0,
            dockerfile: None,
            want: self.dockerfile.clone(),
            ignore,
        };
        walk.dir(&root, "").map_err(|m| self.invalid(m))?;
        let dockerfile = walk
            .dockerfile
            .take()
            .ok_or_else(|| self.invalid(format!("no file {} in the context", self.dockerfile)))?;
        let dockerfile = String::from_utf8(dockerfile)
            .map_err(|_| self.invalid("the Dockerfile is not UTF-8"))?;
        check_dockerfile(&dockerfile).map_err(|m| self.invalid(m))?;
        let tar = walk
            .tar
            .into_inner()
            .map_err(|e| self.invalid(format!("finishing the context: {e}")))?;
        let mut h = Sha256::new();
        h.update(b"berth-dockerfile 1\n");
        h.update(self.dockerfile.as_bytes());
        h.update(b"\0");
        for (k, v) in &self.args {
            h.update(format!("{k}={v}\0"));
        }
        h.update(&tar);
        let hash = hex(&h.finalize());
        Ok(BuildContext {
            tag: format!("{}:{}", self.name, &hash[..TAG_HEX_LEN]),
            tar,
            hash,
            dockerfile,
        })
    }
}

/// The tar of a context, written while walking it.
struct ContextTar {
    tar: tar::Builder<Vec<u8>>,
    bytes: u64,
    dockerfile: Option<Vec<u8>>,
    want: String,
    ignore: Ignore,
}

impl ContextTar {
    /// Adds the entries of the open directory `dir` (at `prefix` in the tar).
    fn dir(&mut self, dir: &OwnedFd, prefix: &str) -> Result<(), String> {
        let mut names = Vec::new();
        let listing = Dir::read_from(dir).map_err(|e| format!("listing {prefix:?}: {e}"))?;
        for entry in listing {
            let entry = entry.map_err(|e| format!("listing {prefix:?}: {e}"))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        names.sort();
        for name in names {
            let path = format!("{prefix}{name}");
            let st = rustix::fs::statat(dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| format!("{path}: {e}"))?;
            let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
            // The Dockerfile and `.dockerignore` go whatever it says, as
            // with Docker's own client.
            let excluded = path != self.want && path != DOCKERIGNORE && self.ignore.excluded(&path);
            if excluded && !(is_dir && self.ignore.has_exceptions()) {
                continue;
            }
            let mut h = tar::Header::new_gnu();
            h.set_uid(0);
            h.set_gid(0);
            h.set_mtime(0);
            h.set_mode(st.st_mode & 0o755);
            match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    let fd = rustix::fs::openat(
                        dir,
                        name.as_str(),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(|e| format!("{path}: {e}"))?;
                    if !excluded {
                        h.set_entry_type(tar::EntryType::Directory);
                        h.set_size(0);
                        self.tar
                            .append_data(&mut h, format!("{path}/"), std::io::empty())
                            .map_err(|e| format!("{path}: {e}"))?;
                    }
                    self.dir(&fd, &format!("{path}/"))?;
                }
                FileType::Symlink => {
                    let target = rustix::fs::readlinkat(dir, name.as_str(), Vec::new())
                        .map_err(|e| format!("{path}: {e}"))?;
                    h.set_entry_type(tar::EntryType::Symlink);
                    h.set_size(0);
                    self.tar
                        .append_link(&mut h, &path, target.to_string_lossy().as_ref())
                        .map_err(|e| format!("{path}: {e}"))?;
                }
                FileType::RegularFile => {
                    let fd = rustix::fs::openat(
                        dir,
                        name.as_str(),
                        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(|e| format!("{path}: {e}"))?;
                    let mut content = Vec::new();
                    let mut file = std::fs::File::from(fd);
                    std::io::Read::read_to_end(&mut file, &mut content)
                        .map_err(|e| format!("{path}: {e}"))?;
                    self.bytes += content.len() as u64;
                    if self.bytes > MAX_CONTEXT_BYTES {
                        return Err(format!(
                            "the context is larger than {} MiB; build from a smaller directory",
                            MAX_CONTEXT_BYTES >> 20
                        ));
                    }
                    if path == self.want {
                        self.dockerfile = Some(content.clone());
                    }
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_size(content.len() as u64);
                    self.tar
                        .append_data(&mut h, &path, content.as_slice())
                        .map_err(|e| format!("{path}: {e}"))?;
                }
                _ => {
                    return Err(format!("{path}: neither a file, a directory nor a symlink"));
                }
            }
        }
        Ok(())
    }
}

/// The file of the patterns left out of the context.
const DOCKERIGNORE: &str = ".dockerignore";

/// The content of the regular file `name` directly in `dir`, not following
/// a link; `None` when there is none.
fn read_beneath(dir: &OwnedFd, name: &str) -> Result<Option<Vec<u8>>, String> {
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let mut content = Vec::new();
            std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut content)
                .map_err(|e| e.to_string())?;
            Ok(Some(content))
        }
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// The Dockerfile's instructions: continuation lines joined, comments and
/// parser directives dropped; `(keyword in upper case, arguments)`.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut escape = '\\';
    let mut out = Vec::new();
    let mut current = String::new();
    let mut directives = true;
    for line in text.lines() {
        let trimmed = line.trim();
        if directives {
            if let Some(d) = trimmed.strip_prefix('#') {
                if let Some((k, v)) = d.split_once('=')
                    && k.trim().eq_ignore_ascii_case("escape")
                    && let Some(c) = v.trim().chars().next()
                {
                    escape = c;
                }
                continue;
            }
            directives = false;
        }
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if !current.is_empty() && trimmed.starts_with('#') {
            continue;
        }
        match trimmed.strip_suffix(escape) {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (k, rest) = current
                    .split_once(char::is_whitespace)
                    .unwrap_or((&current, ""));
                out.push((k.to_ascii_uppercase(), rest.trim().to_string()));
                current.clear();
            }
        }
    }
    if !current.trim().is_empty() {
        let (k, rest) = current
            .split_once(char::is_whitespace)
            .unwrap_or((&current, ""));
        out.push((k.to_ascii_uppercase(), rest.trim().to_string()));
    }
    out
}

/// Whether a source of `ADD` would be fetched rather than read from the
/// context.
fn is_remote(source: &str) -> bool {
    let s = source.trim_matches(|c| c == '"' || c == '[' || c == ']' || c == ',');
    s.contains("://") || s.starts_with("git@")
}

/// Refuses what a build without network must not do: `ADD` from a URL or a
/// git repository.
fn check_dockerfile(text: &str) -> Result<(), String> {
    for (keyword, args) in instructions(text) {
        if keyword == "ADD"
            && let Some(remote) = args
                .split_whitespace()
                .filter(|a| !a.starts_with("--"))
                .find(|a| is_remote(a))
        {
            return Err(format!(
                "`ADD {remote}` fetches from the network, which a berth build has not; put the file in the context and COPY it"
            ));
        }
    }
    Ok(())
}

/// The images the Dockerfile's `FROM`s name, stages and `scratch` left out.
pub(crate) fn base_images(text: &str) -> Vec<String> {
    let mut stages: Vec<String> = Vec::new();
    let mut bases = Vec::new();
    for (keyword, args) in instructions(text) {
        if keyword != "FROM" {
            continue;
        }
        let words: Vec<&str> = args
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .collect();
        let Some(image) = words.first() else { continue };
        if !image.eq_ignore_ascii_case("scratch")
            && !stages.iter().any(|s| s.eq_ignore_ascii_case(image))
            && !image.contains('$')
        {
            bases.push(image.to_string());
        }
        if words.len() >= 3 && words[1].eq_ignore_ascii_case("as") {
            stages.push(words[2].to_string());
        }
    }
    bases
}

impl DockerBackend {
    /// Builds `build` unless an image with its hash exists; the context is
    /// tarred and checked first, every base image must be local.
    pub async fn build_dockerfile(
        &self,
        build: &DockerfileBuild,
        progress: &mut dyn BuildProgress,
    ) -> Result<BuiltImage, DockerError> {
        let started = Instant::now();
        let context = {
            let build = build.clone();
            tokio::task::spawn_blocking(move || build.prepare())
                .await
                .map_err(|source| DockerError::Task {
                    op: "tar the build context",
                    source,
                })??
        };
        let tag = context.tag.clone();
        let bytes = context.tar.len() as u64;
        progress.event(BuildEvent::Resolved {
            tag: &tag,
            entries: 0,
            bytes,
        });
        if let Some(id) = self.local_image_id(&tag).await? {
            progress.event(BuildEvent::UpToDate { tag: &tag });
            return Ok(BuiltImage {
                latest: tag.clone(),
                id,
                tag,
                up_to_date: true,
                entries: 0,
                bytes,
            });
        }
        for base in base_images(&context.dockerfile) {
            if self.local_image_id(&base).await?.is_none() {
                return Err(ImageError::Dockerfile {
                    context: build.context.clone(),
                    message: format!(
                        "FROM {base}: no such image in the local engine, and nothing is pulled (no registry is reachable); build or load it first"
                    ),
                }
                .into());
            }
        }
        progress.event(BuildEvent::ContextReady { bytes });
        let labels = HashMap::from([
            (IMAGE_LABEL.to_string(), build.name.clone()),
            (BUILD_LABEL.to_string(), context.hash.clone()),
        ]);
        let args: HashMap<String, String> = build.args.clone().into_iter().collect();
        let options = BuildImageOptionsBuilder::default()
            .dockerfile(&build.dockerfile)
            .t(&tag)
            .rm(true)
            .forcerm(true)
            .networkmode("none")
            .labels(&labels)
            .buildargs(&args)
            .build();
        let id = self
            .run_build(
                options,
                super::ContextBody::Full(context.tar),
                &tag,
                progress,
            )
            .await?;
        progress.event(BuildEvent::Built {
            tag: &tag,
            id: &id,
            elapsed: started.elapsed(),
        });
        Ok(BuiltImage {
            latest: tag.clone(),
            tag,
            id,
            up_to_date: false,
            entries: 0,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn add_from_the_network_is_refused_in_every_spelling() {
        let refused = [
            "FROM x\nADD https://example.com/a.tgz /a\n",
            "FROM x\nadd --chown=1:1 http://example.com/a /a\n",
            "FROM x\nADD [\"ftp://h/a\", \"/a\"]\n",
            "FROM x\nRUN true\nADD \\\n  git@github.com:o/r.git /src\n",
            "# escape=`\nFROM x\nADD `\n https://h/a /a\n",
        ];
        for text in refused {
            let err = check_dockerfile(text).unwrap_err();
            assert!(err.contains("network"), "{text}: {err}");
        }
        let allowed = [
            "FROM x\nADD a.tgz /a\nCOPY b /b\n",
            "FROM x\n# ADD https://h/a /a\nRUN echo https://h\n",
            "FROM x\nCOPY --from=builder /a /a\n",
        ];
        for text in allowed {
            check_dockerfile(text).unwrap();
        }
    }

    #[test]
    fn base_images_leave_out_stages_and_scratch() {
        let text = "ARG V=1\nFROM --platform=linux/amd64 base:1 AS build\nRUN make\nFROM scratch\nFROM build AS again\nfrom other:2\nFROM img:$V\n";
        assert_eq!(base_images(text), vec!["base:1", "other:2"]);
    }

    #[test]
    fn the_context_is_tarred_without_following_links_and_hashed_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = dir.path().join("ctx");
        std::fs::create_dir_all(ctx.join("sub")).unwrap();
        std::fs::write(ctx.join("Dockerfile"), "FROM scratch\nCOPY . /\n").unwrap();
        std::fs::write(ctx.join("sub/a.txt"), "a\n").unwrap();
        std::fs::write(dir.path().join("secret"), "outside\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), ctx.join("leak")).unwrap();
        let build = DockerfileBuild {
            name: "berth-test".into(),
            context: ctx.clone(),
            dockerfile: "Dockerfile".into(),
            args: BTreeMap::new(),
        };
        let first = build.prepare().unwrap();
        let mut archive = tar::Archive::new(first.tar.as_slice());
        let mut seen = Vec::new();
        for e in archive.entries().unwrap() {
            let e = e.unwrap();
            let path = e.path().unwrap().to_string_lossy().into_owned();
            let kind = e.header().entry_type();
            seen.push((path, kind.is_symlink(), e.header().mtime().unwrap()));
        }
        assert!(
            seen.iter().any(|(p, link, _)| p == "leak" && *link),
            "{seen:?}"
        );
        assert!(seen.iter().all(|(_, _, mtime)| *mtime == 0));
        assert!(!String::from_utf8_lossy(&first.tar).contains("outside"));

        // Same content, touched: the same tag. Changed content: another.
        std::fs::write(ctx.join("sub/a.txt"), "a\n").unwrap();
        assert_eq!(build.prepare().unwrap().tag, first.tag);
        std::fs::write(ctx.join("sub/a.txt"), "b\n").unwrap();
        assert_ne!(build.prepare().unwrap().tag, first.tag);
        let mut with_arg = build.clone();
        with_arg.args.insert("V".into(), "1".into());
        assert_ne!(
            with_arg.prepare().unwrap().tag,
            build.prepare().unwrap().tag
        );

        // What `.dockerignore` leaves out is neither sent nor hashed.
        std::fs::write(ctx.join(".dockerignore"), ".git\n*.log\n").unwrap();
        let ignoring = build.prepare().unwrap();
        std::fs::create_dir_all(ctx.join(".git")).unwrap();
        std::fs::write(ctx.join(".git/HEAD"), "ref: x\n").unwrap();
        std::fs::write(ctx.join("build.log"), "noise\n").unwrap();
        let again = build.prepare().unwrap();
        assert_eq!(again.tag, ignoring.tag);
        assert!(!String::from_utf8_lossy(&again.tar).contains("noise"));
        std::fs::remove_file(ctx.join(".dockerignore")).unwrap();

        let mut escaping = build.clone();
        escaping.dockerfile = "../Dockerfile".into();
        assert!(escaping.prepare().is_err());
        std::fs::write(ctx.join("Dockerfile"), "FROM x\nADD https://h/a /a\n").unwrap();
        let err = build.prepare().unwrap_err().to_string();
        assert!(err.contains("ADD https://h/a"), "{err}");
    }
}
