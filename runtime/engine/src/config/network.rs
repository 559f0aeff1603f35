//! `[sandbox.network]`'s lists checked when `berth.toml` is parsed: a host
//! that does not read, a preset berth does not know or a list beside a mode
//! that would ignore it is an error naming its line, never a rule silently
//! dropped (a dropped deny entry would allow what the user meant to refuse).

use super::key_line::find_key_line;
use super::{NetworkMode, ProjectConfig};
use crate::error::{EngineError, Result};

impl ProjectConfig {
    /// `[sandbox.network]`'s `allow`, `deny`, `allow_presets` and
    /// `wait_secs`: every host reads as a host pattern, every preset is
    /// known, and the lists are given only with `mode = "allowlist"` (a deny
    /// list beside `mode = "open"` would enforce nothing).
    pub(super) fn check_network_lists(&self, text: &str, file: &str) -> Result<()> {
        let n = &self.sandbox.network;
        let err = |key: &str, why: String| EngineError::Config {
            file: file.to_string(),
            line: find_key_line(text, "sandbox.network", key).unwrap_or(1),
            column: 1,
            message: format!("key `sandbox.network.{key}`: {why}"),
        };
        for (key, given) in [
            ("allow", !n.allow.is_empty()),
            ("deny", !n.deny.is_empty()),
            ("allow_presets", !n.allow_presets.is_empty()),
        ] {
            if given && n.mode != NetworkMode::Allowlist {
                return Err(err(
                    key,
                    format!(
                        "applies only with `mode = \"allowlist\"` (the mode is \"{}\"): remove it, or set the mode",
                        n.mode.as_str()
                    ),
                ));
            }
        }
        for (key, hosts) in [("allow", &n.allow), ("deny", &n.deny)] {
            for h in hosts {
                berth_policy::network::HostPattern::parse(h).map_err(|why| err(key, why))?;
            }
        }
        n.preset_hosts().map_err(|why| err("allow_presets", why))?;
        if n.wait_secs > crate::config::sandbox::MAX_NETWORK_WAIT_SECS {
            return Err(err(
                "wait_secs",
                format!(
                    "must be at most {} (seconds a connection is held for a person)",
                    crate::config::sandbox::MAX_NETWORK_WAIT_SECS
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use berth_policy::decision::RuleList;

    use crate::config::{NetworkMode, ProjectConfig};

    #[test]
    fn allowlist_reads_its_lists_and_presets() {
        let text = "[sandbox.network]\nmode = \"allowlist\"\nallow = [\"*.pypi.org\", \"10.0.0.5\"]\ndeny = [\"evil.test\"]\nallow_presets = [\"npm\", \"crates\"]\nwait_secs = 5\n";
        let c = ProjectConfig::parse(text, "berth.toml").unwrap();
        let n = &c.sandbox.network;
        assert_eq!(n.mode, NetworkMode::Allowlist);
        assert_eq!(n.wait_secs, 5);
        let mut rules = berth_policy::RuleSet::default();
        n.add_rules(&mut rules);
        let allow = rules
            .network
            .iter()
            .filter(|r| r.list == RuleList::Allow)
            .count();
        let deny = rules
            .network
            .iter()
            .filter(|r| r.list == RuleList::Deny)
            .count();
        // 2 written + npm's 2 + crates' 3.
        assert_eq!((allow, deny), (7, 1));
        assert!(rules.warnings.is_empty(), "{:?}", rules.warnings);
        assert!(rules.network.iter().any(|r| {
            r.raw == "static.crates.io"
                && r.source
                    .as_ref()
                    .is_some_and(|s| s.file.contains("allow_presets crates"))
        }));
    }

    #[test]
    fn defaults_and_old_spellings() {
        let c = ProjectConfig::parse("", "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.wait_secs, 60);
        assert_eq!(c.sandbox.network.mode, NetworkMode::None);
        // The old string form still parses, with the new fields at their defaults.
        let c = ProjectConfig::parse("[sandbox]\nnetwork = \"none\"\n", "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.wait_secs, 60);
        assert!(c.sandbox.network.allow.is_empty());
        // The inline table form takes the new keys too.
        let text = "[sandbox]\nnetwork = { mode = \"allowlist\", allow_presets = [\"pypi\"] }\n";
        let c = ProjectConfig::parse(text, "berth.toml").unwrap();
        assert_eq!(c.sandbox.network.allow_presets, ["pypi"]);
    }

    /// (berth.toml, the error's start, why)
    const BAD: &[(&str, &str, &str)] = &[
        (
            "[sandbox.network]\nmode = \"allowlist\"\n\nallow = [\"a.*.com\"]\n",
            "berth.toml:4:1: key `sandbox.network.allow`: `a.*.com`: the only wildcard",
            "a wildcard only at the start",
        ),
        (
            "[sandbox.network]\nmode = \"allowlist\"\ndeny = [\"bad host\"]\n",
            "berth.toml:3:1: key `sandbox.network.deny`: `bad host` is not a host name",
            "a deny entry that does not read is an error, not a rule dropped",
        ),
        (
            "[sandbox.network]\nmode = \"allowlist\"\nallow_presets = [\"maven\"]\n",
            "berth.toml:3:1: key `sandbox.network.allow_presets`: `maven` is not a preset",
            "an unknown preset",
        ),
        (
            "[sandbox.network]\nmode = \"open\"\ndeny = [\"evil.test\"]\n",
            "berth.toml:3:1: key `sandbox.network.deny`: applies only with `mode = \"allowlist\"`",
            "a deny list beside open would enforce nothing",
        ),
        (
            "[sandbox.network]\nallow = [\"crates.io\"]\n",
            "berth.toml:2:1: key `sandbox.network.allow`: applies only with `mode = \"allowlist\"`",
            "the default mode is none",
        ),
        (
            "[sandbox.network]\nmode = \"allowlist\"\nwait_secs = 86400\n",
            "berth.toml:3:1: key `sandbox.network.wait_secs`: must be at most 3600",
            "a wait no client would sit through",
        ),
        (
            "[sandbox.network]\nmode = \"allowlist\"\ndocker_network = \"br0\"\n",
            "berth.toml:3:1: key `sandbox.network.docker_network`: applies only with `mode = \"open\"`",
            "a Docker network means nothing without a route out",
        ),
        (
            "[sandbox.network]\nmode = \"allow-list\"\n",
            "berth.toml:2:8: key `sandbox.network.mode`: unknown variant `allow-list`",
            "a misspelt mode",
        ),
    ];

    #[test]
    fn bad_values_name_file_line_and_key() {
        for (text, want, why) in BAD {
            let e = ProjectConfig::parse(text, "berth.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(want), "{why}: got {e:?}");
        }
    }
}
