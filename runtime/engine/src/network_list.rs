//! A project's network allow- and deny-list as a person reads and edits it
//! (the approvals page): every host rule that decides `network_connect`,
//! where it is written, and adding or removing a host.
//!
//! The rules come from two files, both berth's and never a worktree's:
//! `[sandbox.network] allow`/`deny` (and `allow_presets`) in the project's
//! `berth.toml`, and `WebFetch(domain:…)` entries in its `permissions.json`
//! (which "approve always" on a `network_connect` appends to). A host added
//! here goes into `berth.toml`'s list, beside what the person wrote; a host
//! is removed from whichever of the two files holds it. A preset's hosts
//! are shown but not removable one by one (the preset is one line of
//! `berth.toml`). The edit is checked by reading the file back: a list
//! written across lines, which a one-line rewrite cannot keep, is refused
//! with the file to edit by hand, never half-written.
//!
//! Each change is an event (`project.network_rule_added`,
//! `project.network_rule_removed`); the gate reads the files at each
//! connection, so it takes effect at the next one.

use berth_policy::decision::RuleList;
use berth_policy::network::HostPattern;
use serde::{Deserialize, Serialize};

use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::projects::with_key;
use crate::{Engine, projects};

/// Which list a host rule is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkListKind {
    Allow,
    Deny,
}

impl NetworkListKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkListKind::Allow => "allow",
            NetworkListKind::Deny => "deny",
        }
    }
}

/// One host rule and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRule {
    /// The host pattern (`registry.npmjs.org`, `*.pypi.org`, `10.0.0.5`).
    pub host: String,
    /// `berth.toml`, `berth.toml allow_presets <name>`, or
    /// `permissions.json`.
    pub source: String,
    /// Whether [`Engine::remove_network_host`] can remove it (a preset's
    /// hosts cannot, one by one).
    pub removable: bool,
}

/// A project's host rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkList {
    pub project: String,
    /// `[sandbox.network] mode`: the lists decide only under `allowlist`.
    pub mode: String,
    pub allow: Vec<NetworkRule>,
    pub deny: Vec<NetworkRule>,
}

/// `host` as a rule names it (lower-case, no trailing dot), or why not.
fn host_of(host: &str) -> Result<String> {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    HostPattern::parse(&host).map_err(|why| EngineError::Invalid {
        what: "host",
        value: host.clone(),
        why,
    })?;
    Ok(host)
}

/// `hosts` as a TOML array.
fn toml_array(hosts: &[String]) -> String {
    let quoted: Vec<String> = hosts
        .iter()
        .map(|h| format!("\"{}\"", h.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// The host of a `WebFetch(domain:…)` entry.
fn web_fetch_host(entry: &str) -> Option<&str> {
    entry
        .strip_prefix("WebFetch(domain:")?
        .strip_suffix(')')
        .map(str::trim)
}

impl Engine {
    /// `project`'s host rules.
    pub async fn network_list(&self, project: &str) -> Result<NetworkList> {
        self.project(project).await?;
        let (config, rules) = projects::project_files(self.state(), project)?;
        let mut list = NetworkList {
            project: project.to_string(),
            mode: config.sandbox.network.mode.as_str().to_string(),
            allow: Vec::new(),
            deny: Vec::new(),
        };
        for r in &rules.network {
            let file = r.source.as_ref().map(|s| s.file.as_ref()).unwrap_or("");
            let (host, source, removable) =
                if let Some(key) = file.strip_prefix("berth.toml [sandbox.network] ") {
                    match key.strip_prefix("allow_presets ") {
                        Some(preset) => (
                            r.raw.clone(),
                            format!("berth.toml allow_presets {preset}"),
                            false,
                        ),
                        None => (r.raw.clone(), "berth.toml".to_string(), true),
                    }
                } else {
                    let host = web_fetch_host(&r.raw).unwrap_or(&r.raw).to_string();
                    (host, "permissions.json".to_string(), true)
                };
            let rule = NetworkRule {
                host,
                source,
                removable,
            };
            match r.list {
                RuleList::Allow => list.allow.push(rule),
                RuleList::Deny => list.deny.push(rule),
                RuleList::Ask => {}
            }
        }
        Ok(list)
    }

    /// Adds `host` to `project`'s `[sandbox.network]` `which` list in
    /// `berth.toml` (nothing when it is there already).
    pub async fn add_network_host(
        &self,
        project: &str,
        which: NetworkListKind,
        host: &str,
        actor: &Actor,
    ) -> Result<NetworkList> {
        let (host, mut hosts) = self.listed_hosts(project, which, host).await?;
        if !hosts.contains(&host) {
            hosts.push(host.clone());
            self.write_network_hosts(project, which, &hosts)?;
            self.network_rule_event(
                kind::NETWORK_RULE_ADDED,
                project,
                which,
                &host,
                "berth.toml",
                actor,
            )
            .await?;
        }
        self.network_list(project).await
    }

    /// Removes `host` from `project`'s `which` list: from `berth.toml`'s and
    /// from `permissions.json`'s `WebFetch(domain:…)` entries, wherever it
    /// is. A host on neither (a preset's, or none) is an error.
    pub async fn remove_network_host(
        &self,
        project: &str,
        which: NetworkListKind,
        host: &str,
        actor: &Actor,
    ) -> Result<NetworkList> {
        let (host, hosts) = self.listed_hosts(project, which, host).await?;
        let mut removed_from = Vec::new();
        if hosts.contains(&host) {
            let kept: Vec<String> = hosts.iter().filter(|h| **h != host).cloned().collect();
            self.write_network_hosts(project, which, &kept)?;
            removed_from.push("berth.toml");
        }
        let rules = self.state.project_rules(project);
        if rules.exists()
            && crate::permissions::remove_entry(
                &rules,
                which.as_str(),
                &format!("WebFetch(domain:{host})"),
            )?
        {
            removed_from.push("permissions.json");
        }
        if removed_from.is_empty() {
            return Err(EngineError::Invalid {
                what: "host",
                value: host,
                why: format!(
                    "not on project {project}'s {} list in berth.toml or permissions.json (a preset's host goes with its preset: edit allow_presets)",
                    which.as_str()
                ),
            });
        }
        for file in removed_from {
            self.network_rule_event(
                kind::NETWORK_RULE_REMOVED,
                project,
                which,
                &host,
                file,
                actor,
            )
            .await?;
        }
        self.network_list(project).await
    }

    /// `host` as rules name it, and `project`'s `berth.toml` `which` list
    /// now.
    async fn listed_hosts(
        &self,
        project: &str,
        which: NetworkListKind,
        host: &str,
    ) -> Result<(String, Vec<String>)> {
        self.project(project).await?;
        let host = host_of(host)?;
        let config = ProjectConfig::load(&self.state.project_config(project))?;
        let network = config.sandbox.network;
        Ok((
            host,
            match which {
                NetworkListKind::Allow => network.allow,
                NetworkListKind::Deny => network.deny,
            },
        ))
    }

    /// Rewrites `berth.toml`'s `[sandbox.network] which = hosts`, checked by
    /// reading it back; the file is replaced atomically.
    fn write_network_hosts(
        &self,
        project: &str,
        which: NetworkListKind,
        hosts: &[String],
    ) -> Result<()> {
        let path = self.state.project_config(project);
        let text = std::fs::read_to_string(&path).map_err(EngineError::io("reading", &path))?;
        let new = with_key(&text, "sandbox.network", which.as_str(), &toml_array(hosts));
        let not_set = || EngineError::Invalid {
            what: "berth.toml edit",
            value: format!("[sandbox.network] {}", which.as_str()),
            why: format!(
                "the list could not be rewritten in {} (is it written across lines?): edit it by hand",
                path.display()
            ),
        };
        let parsed =
            ProjectConfig::parse(&new, &path.display().to_string()).map_err(|_| not_set())?;
        let now = match which {
            NetworkListKind::Allow => &parsed.sandbox.network.allow,
            NetworkListKind::Deny => &parsed.sandbox.network.deny,
        };
        if now != hosts {
            return Err(not_set());
        }
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, &new).map_err(EngineError::io("writing", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(EngineError::io("replacing", &path))
    }

    async fn network_rule_event(
        &self,
        event: &'static str,
        project: &str,
        which: NetworkListKind,
        host: &str,
        file: &str,
        actor: &Actor,
    ) -> Result<()> {
        let op = "recording a network rule";
        let mut tx = self.store.write(op).await?;
        emit(
            &mut tx,
            NewEvent::new(event, actor)
                .project(project)
                .payload(serde_json::json!({
                    "list": which.as_str(), "host": host, "file": file,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hosts_and_entries_read() {
        assert_eq!(host_of(" Registry.Test. ").unwrap(), "registry.test");
        assert!(host_of("a b").is_err());
        assert_eq!(
            toml_array(&["a.test".into(), "*.b.test".into()]),
            "[\"a.test\", \"*.b.test\"]"
        );
        assert_eq!(web_fetch_host("WebFetch(domain:x.com)"), Some("x.com"));
        assert_eq!(web_fetch_host("Bash(ls)"), None);
    }
}
