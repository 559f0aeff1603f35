//! `[sandbox]`: where an agent's commands run (the runner or a container),
//! with what limits, disk and network, and which host directories it sees.

use serde::{Deserialize, Serialize};

use super::declared_dir::{DeclaredDir, path_or_table};

/// The smallest `[sandbox] disk`: an ext4 file system with its journal and a
/// checkout of any size needs at least this.
pub const MIN_DISK_BYTES: u64 = 32 << 20;

/// Where a berth runs: the sandbox crate's, which opens it.
pub use berth_sandbox::BerthMode;

/// `sandbox.mode`: a fixed mode, or `auto` — mounted when the Docker engine
/// answers, the runner otherwise (said plainly when it happens). The choice is
/// the sandbox provider's: a provider without Docker always picks the runner.
/// (Its `auto` is not the execution mode's `auto` nor autonomy's auto mode.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BerthModeChoice {
    #[default]
    Auto,
    Runner,
    Mounted,
}

impl BerthModeChoice {
    /// The mode this choice fixes; `None` for `auto`.
    pub fn fixed(self) -> Option<BerthMode> {
        match self {
            BerthModeChoice::Auto => None,
            BerthModeChoice::Runner => Some(BerthMode::Runner),
            BerthModeChoice::Mounted => Some(BerthMode::Mounted),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: BerthModeChoice,
    pub image: String,
    pub uid: u32,
    pub memory_mb: u64,
    pub cpus: f64,
    pub pids: u64,
    /// `[sandbox.network]`; the old string form `network = "…"` still
    /// parses (with a warning naming the table).
    #[serde(deserialize_with = "network_table_or_string")]
    pub network: NetworkConfig,
    /// mounted: the image's filesystem read-only (the default); `/tmp` and
    /// `$HOME` are bounded tmpfs either way.
    pub read_only_root: bool,
    /// mounted: commands go through the berth's exec agent (berth-helper in
    /// the container) rather than a Docker API exec each; `false` sends
    /// every command through Docker.
    pub exec_agent: bool,
    pub timeout_secs: u64,
    pub output_cap_bytes: usize,
    /// mounted: size of the tmpfs `/tmp`, MiB.
    pub tmp_mb: u64,
    /// mounted: files and directories `/tmp` may hold.
    pub tmp_inodes: u64,
    /// mounted: size of the tmpfs `$HOME`, MiB.
    pub home_mb: u64,
    /// mounted: files and directories `$HOME` may hold.
    pub home_inodes: u64,
    /// Accept auto mode on a runner berth where the runner's confinement
    /// is not available (auto mode is refused there otherwise).
    pub allow_unconfined: bool,
    /// Host directories shown to a berth's commands read-only at their own
    /// paths (a runner exec's bind and Landlock read; a container's bind),
    /// with the environment each one carries ([`crate::declared_dirs`]).
    #[serde(deserialize_with = "path_or_table")]
    pub toolchains: Vec<DeclaredDir>,
    /// Host directories shown read-write at their own paths.
    #[serde(deserialize_with = "path_or_table")]
    pub caches: Vec<DeclaredDir>,
    /// When berth is root: the size of the berth's own disk (a loop-mounted
    /// ext4 image holding its worktree and agent repository).
    pub disk: ByteSize,
    /// Files and directories the berth's own disk may hold.
    pub disk_inodes: u64,
    /// `berth up` fails where the berth cannot get a disk of its own
    /// (berth not root, no loop device, no `mkfs.ext4`) instead of saying so.
    pub disk_required: bool,
    /// `[sandbox.build]`: the project's image from a Dockerfile.
    pub build: BuildConfig,
    /// The project's `devcontainer.json`, a path in its repository read
    /// from the base branch in the forge; `""`: `.devcontainer/devcontainer.json`
    /// or `.devcontainer.json`, when there is one ([`crate::devcontainer`]).
    pub devcontainer: String,
}

/// `[sandbox.build]`: mounted berths run the image built from this
/// Dockerfile (by the local engine, with no network) instead of `image`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuildConfig {
    /// The build context: a directory of the repository, read from the
    /// project's base branch in the forge (`"."` its root); or, deprecated,
    /// an absolute host path. `""`: no build.
    pub context: String,
    /// The Dockerfile's path inside the context.
    pub dockerfile: String,
    /// Build arguments (the Dockerfile's `ARG`s).
    pub args: std::collections::BTreeMap<String, String>,
}

impl Default for BuildConfig {
    fn default() -> Self {
        BuildConfig {
            context: String::new(),
            dockerfile: "Dockerfile".to_string(),
            args: Default::default(),
        }
    }
}

/// Where `[sandbox.build]`'s context is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildSource {
    /// A directory of the project's base branch in the forge: its path in
    /// the tree (`/`-separated, `""` the root).
    BaseBranch(String),
    /// An absolute host path, read when the image is built (deprecated).
    HostPath(std::path::PathBuf),
}

impl BuildConfig {
    /// Whether a Dockerfile is configured.
    pub fn is_set(&self) -> bool {
        !self.context.trim().is_empty()
    }

    /// Where the context is read from; `None` when no Dockerfile is set.
    pub fn source(&self) -> Option<BuildSource> {
        let context = self.context.trim();
        if context.is_empty() {
            return None;
        }
        if std::path::Path::new(context).is_absolute() {
            return Some(BuildSource::HostPath(context.into()));
        }
        let dir = context.trim_start_matches("./").trim_end_matches('/');
        Some(BuildSource::BaseBranch(
            if dir == "." { "" } else { dir }.to_string(),
        ))
    }
}

impl SandboxConfig {
    /// What is wrong with `[sandbox.build]`, as (key, why).
    pub(super) fn build_problem(&self) -> Option<(&'static str, String)> {
        let b = &self.build;
        if !b.is_set() {
            return None;
        }
        if !self.image.trim().is_empty() {
            return Some((
                "context",
                format!(
                    "a Dockerfile and `sandbox.image = {:?}` both name the image; keep one",
                    self.image
                ),
            ));
        }
        if let Some(BuildSource::BaseBranch(dir)) = b.source()
            && !dir.is_empty()
            && dir
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Some((
                "context",
                "must be a directory of the repository (\".\" its root), without '..' or empty parts".to_string(),
            ));
        }
        let dockerfile = std::path::Path::new(&b.dockerfile);
        if b.dockerfile.is_empty()
            || dockerfile.is_absolute()
            || dockerfile
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Some((
                "dockerfile",
                "must be a relative path inside the context, without '..'".to_string(),
            ));
        }
        None
    }
}

/// A size in bytes, written as a number of bytes or a string with a unit:
/// `"8GiB"`, `"512 MiB"`, `"64M"` (K, M, G, T and their `iB` forms are
/// powers of 1024; `kB`, `MB`, `GB`, `TB` powers of 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn gib(n: u64) -> ByteSize {
        ByteSize(n << 30)
    }

    pub fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `"8GiB"`-style sizes; `None` for anything else (or an overflow).
    pub fn parse(text: &str) -> Option<ByteSize> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number.parse().ok()?;
        let factor: u64 = match unit.trim() {
            "" | "B" => 1,
            "K" | "KiB" | "k" => 1 << 10,
            "M" | "MiB" => 1 << 20,
            "G" | "GiB" => 1 << 30,
            "T" | "TiB" => 1 << 40,
            "kB" | "KB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            _ => return None,
        };
        number.checked_mul(factor).map(ByteSize)
    }
}

impl std::fmt::Display for ByteSize {
    /// The largest binary unit that divides it exactly (`8GiB`, `65MiB`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0;
        for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.is_multiple_of(1u64 << shift) {
                return write!(f, "{}{unit}", n >> shift);
            }
        }
        write!(f, "{n}B")
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Size;
        impl serde::de::Visitor<'_> for Size {
            type Value = ByteSize;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a size such as \"8GiB\", \"512MiB\" or a number of bytes")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<ByteSize, E> {
                ByteSize::parse(v).ok_or_else(|| {
                    E::custom(format!(
                        "{v:?} is not a size: write it like \"8GiB\", \"512MiB\" or \"64M\""
                    ))
                })
            }
        }
        d.deserialize_any(Size)
    }
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            mode: BerthModeChoice::Auto,
            image: String::new(),
            uid: 1000,
            memory_mb: 2048,
            cpus: 2.0,
            pids: 512,
            network: NetworkConfig::default(),
            read_only_root: true,
            exec_agent: true,
            timeout_secs: 600,
            output_cap_bytes: 1 << 20,
            allow_unconfined: false,
            tmp_mb: 256,
            tmp_inodes: 65_536,
            home_mb: 256,
            home_inodes: 65_536,
            toolchains: Vec::new(),
            caches: Vec::new(),
            disk: ByteSize::gib(8),
            disk_inodes: 524_288,
            disk_required: false,
            build: BuildConfig::default(),
            devcontainer: String::new(),
        }
    }
}

/// `[sandbox.network] mode`: what the commands of a berth reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkMode {
    /// Only loopback: a container on Docker's `none` network, a runner exec
    /// in a network namespace of its own holding only `lo`.
    #[default]
    None,
    /// No route out but berth's egress proxy: every connection is a
    /// `network_connect` decision over `allow`, `deny` and `allow_presets`.
    /// (Until a berth is wired to the proxy it has no network at all, as
    /// with `none`.)
    Allowlist,
    /// The network: a container on the default bridge (or `docker_network`),
    /// a runner exec in the host's network namespace.
    Open,
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::None => "none",
            NetworkMode::Allowlist => "allowlist",
            NetworkMode::Open => "open",
        }
    }
}

/// The package registries `allow_presets` names, each with the hosts its
/// clients fetch from.
pub const NETWORK_PRESETS: &[(&str, &[&str])] = &[
    ("npm", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    ("pypi", &["pypi.org", "files.pythonhosted.org"]),
    (
        "crates",
        &["crates.io", "index.crates.io", "static.crates.io"],
    ),
];

/// The longest `wait_secs`: a connection held longer than this is a client
/// that has long given up.
pub const MAX_NETWORK_WAIT_SECS: u64 = 3600;

/// `[sandbox.network]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    pub mode: NetworkMode,
    /// mounted, `mode = "open"`: a Docker network by name; `""` is the
    /// default bridge.
    pub docker_network: String,
    /// `mode = "allowlist"`: hosts reached without asking (`crates.io`,
    /// `*.pypi.org`, an address).
    pub allow: Vec<String>,
    /// `mode = "allowlist"`: hosts always refused, in auto mode too.
    pub deny: Vec<String>,
    /// `mode = "allowlist"`: package registries allowed by name
    /// ([`NETWORK_PRESETS`]).
    pub allow_presets: Vec<String>,
    /// `mode = "allowlist"`: how long the proxy holds a connection whose
    /// `network_connect` waits for a person before refusing it.
    pub wait_secs: u64,
    /// The old `[sandbox] network = "…"` this was read from, if it was.
    #[serde(skip)]
    pub legacy: Option<String>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            mode: NetworkMode::None,
            docker_network: String::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            allow_presets: Vec::new(),
            wait_secs: 60,
            legacy: None,
        }
    }
}

impl NetworkConfig {
    /// The table the old `[sandbox] network = "none" | "<docker network>"`
    /// meant.
    fn from_legacy(value: &str) -> NetworkConfig {
        let (mode, docker_network) = match value {
            "none" => (NetworkMode::None, String::new()),
            name => (NetworkMode::Open, name.to_string()),
        };
        NetworkConfig {
            mode,
            docker_network,
            legacy: Some(value.to_string()),
            ..NetworkConfig::default()
        }
    }

    /// The hosts of `allow_presets`, with the preset each comes from;
    /// `Err` names a preset berth does not know.
    pub fn preset_hosts(&self) -> std::result::Result<Vec<(&str, &'static str)>, String> {
        let mut out = Vec::new();
        for name in &self.allow_presets {
            let Some((_, hosts)) = NETWORK_PRESETS.iter().find(|(n, _)| n == name) else {
                let known: Vec<&str> = NETWORK_PRESETS.iter().map(|(n, _)| *n).collect();
                return Err(format!(
                    "`{name}` is not a preset berth knows: use one of {}",
                    known.join(", ")
                ));
            };
            out.extend(hosts.iter().map(|h| (name.as_str(), *h)));
        }
        Ok(out)
    }

    /// Adds this table's host rules (`allow`, the presets' hosts, `deny`)
    /// to `rules`, where `network_connect` decisions read them. Checked when
    /// the file was parsed; an entry that still does not read is skipped
    /// with a warning in `rules` (never allowed).
    pub fn add_rules(&self, rules: &mut berth_policy::RuleSet) {
        use berth_policy::decision::{RuleList, SourceLoc};
        let presets = self.preset_hosts().unwrap_or_default();
        let entries = self
            .allow
            .iter()
            .enumerate()
            .map(|(i, h)| (RuleList::Allow, h.as_str(), "allow".to_string(), i))
            .chain(
                presets
                    .iter()
                    .enumerate()
                    .map(|(i, (p, h))| (RuleList::Allow, *h, format!("allow_presets {p}"), i)),
            )
            .chain(
                self.deny
                    .iter()
                    .enumerate()
                    .map(|(i, h)| (RuleList::Deny, h.as_str(), "deny".to_string(), i)),
            );
        for (list, host, key, i) in entries {
            let loc = SourceLoc {
                file: format!("berth.toml [sandbox.network] {key}").into(),
                line: i + 1,
                column: 1,
            };
            if let Err(e) = rules.add_host(list, host, Some(loc)) {
                rules.warnings.push(e.to_string());
            }
        }
    }

    /// The table to write instead of the old form, as TOML.
    pub(super) fn replacement(&self) -> String {
        let mut t = format!("[sandbox.network]\nmode = \"{}\"", self.mode.as_str());
        if !self.docker_network.is_empty() {
            t.push_str(&format!("\ndocker_network = \"{}\"", self.docker_network));
        }
        t
    }
}

/// `[sandbox] network` as the table `[sandbox.network]` (or an inline table),
/// or the old string form.
fn network_table_or_string<'de, D>(d: D) -> std::result::Result<NetworkConfig, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Either;
    impl<'de> serde::de::Visitor<'de> for Either {
        type Value = NetworkConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a table with `mode = \"none\"` or `mode = \"open\"`")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<NetworkConfig, E> {
            Ok(NetworkConfig::from_legacy(v))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            map: A,
        ) -> std::result::Result<NetworkConfig, A::Error> {
            NetworkConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(Either)
}
