//! `[agent.env]`: which of berth's environment variables a `command`
//! agent's program receives (issue 18). Names only: a value never lives in
//! `berth.toml`, a plain file in berth's state that people read, copy and
//! commit, so a secret written there would leak. The table is
//!
//! ```toml
//! [agent.env]
//! pass = ["ANTHROPIC_API_KEY"]
//! ```
//!
//! and any other key in it (`ANTHROPIC_API_KEY = "sk-…"`) is refused with
//! the way to pass the variable instead. The first spelling, `[agent] env =
//! ["NAME"]`, still reads the same, with a note to rewrite it
//! ([`AgentEnvConfig::legacy`]).

use serde::{Deserialize, Serialize};

use super::key_line::find_key_line;
use crate::error::{EngineError, Result};

/// The names of variables passed from berth's environment to a `command`
/// agent's program.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct AgentEnvConfig {
    /// The variables' names; one berth does not have is left out.
    pub pass: Vec<String>,
    /// Read from the old `[agent] env = [...]` form.
    #[serde(skip)]
    pub legacy: bool,
}

/// The key of `[agent.env]` naming the variables.
const PASS: &str = "pass";

impl AgentEnvConfig {
    /// Refuses an entry that is not a variable's name
    /// (`[A-Za-z_][A-Za-z0-9_]*`), naming its line in `text` (the file
    /// `file`). The entry is named by its place, never shown: it may be a
    /// value pasted by mistake.
    pub(super) fn check(&self, text: &str, file: &str) -> Result<()> {
        let Some(at) = self.pass.iter().position(|n| !is_variable_name(n)) else {
            return Ok(());
        };
        Err(EngineError::Config {
            file: file.to_string(),
            line: find_key_line(text, "agent.env", PASS)
                .or_else(|| find_key_line(text, "agent", "env"))
                .unwrap_or(1),
            column: 1,
            message: format!(
                "key `agent.env.pass`: entry {} is not an environment variable's name (letters, \
                 digits and `_`, not starting with a digit): `pass` lists names, never values",
                at + 1
            ),
        })
    }

    /// The note for the old form, naming the file and its line; None for
    /// the table.
    pub(super) fn legacy_note(&self, text: &str, file: &str) -> Option<String> {
        if !self.legacy {
            return None;
        }
        let line = find_key_line(text, "agent", "env").unwrap_or(1);
        let names: Vec<String> = self.pass.iter().map(|n| format!("{n:?}")).collect();
        Some(format!(
            "{file}:{line}: `[agent] env = [...]` is the old form: write the table\n\
             [agent.env]\npass = [{}]\ninstead (it means the same)",
            names.join(", ")
        ))
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `[agent] env` as the table `[agent.env]` (`pass = [names]`), or the old
/// list of names.
pub(super) fn env_table_or_names<'de, D>(d: D) -> std::result::Result<AgentEnvConfig, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Either;
    impl<'de> serde::de::Visitor<'de> for Either {
        type Value = AgentEnvConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a table `[agent.env]` with `pass = [\"NAME\", …]`")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            seq: A,
        ) -> std::result::Result<AgentEnvConfig, A::Error> {
            let pass =
                Vec::<String>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
            Ok(AgentEnvConfig { pass, legacy: true })
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<AgentEnvConfig, A::Error> {
            let mut pass: Option<Vec<String>> = None;
            while let Some(key) = map.next_key::<String>()? {
                if key == PASS {
                    if pass.is_some() {
                        return Err(serde::de::Error::duplicate_field(PASS));
                    }
                    pass = Some(map.next_value()?);
                    continue;
                }
                // Never echo what follows the key: it may be a secret.
                return Err(serde::de::Error::custom(format!(
                    "`{key} = …` sets a value, and berth.toml never holds a variable's value \
                     (a plain file people read and copy): name the variable in \
                     `pass = [\"{key}\"]` and set it in the environment berth runs in"
                )));
            }
            Ok(AgentEnvConfig {
                pass: pass.unwrap_or_default(),
                legacy: false,
            })
        }
    }
    d.deserialize_any(Either)
}

#[cfg(test)]
mod tests {
    use crate::config::ProjectConfig;

    fn parse(text: &str) -> crate::error::Result<ProjectConfig> {
        ProjectConfig::parse(text, "berth.toml")
    }

    #[test]
    fn the_table_names_the_variables_and_the_old_list_still_reads_with_a_note() {
        let c = parse("[agent.env]\npass = [\"ANTHROPIC_API_KEY\", \"HTTPS_CA\"]\n").unwrap();
        assert_eq!(c.agent.env.pass, ["ANTHROPIC_API_KEY", "HTTPS_CA"]);
        assert!(!c.agent.env.legacy && c.warnings.is_empty(), "{c:?}");

        let old = parse("[agent]\nturn_timeout_secs = 5\nenv = [\"OPENAI_API_KEY\"]\n").unwrap();
        assert_eq!(old.agent.env.pass, ["OPENAI_API_KEY"]);
        assert_eq!(old.warnings.len(), 1, "{:?}", old.warnings);
        assert!(
            old.warnings[0].starts_with("berth.toml:3: `[agent] env = [...]` is the old form")
                && old.warnings[0].contains("[agent.env]\npass = [\"OPENAI_API_KEY\"]"),
            "{}",
            old.warnings[0]
        );
        // The same meaning either way.
        assert_eq!(
            old.agent.env.pass,
            parse("[agent]\nenv = { pass = [\"OPENAI_API_KEY\"] }\n")
                .unwrap()
                .agent
                .env
                .pass
        );
    }

    #[test]
    fn a_value_in_the_table_is_refused_without_echoing_it() {
        let e = parse("[agent.env]\npass = []\nANTHROPIC_API_KEY = \"sk-ant-secret\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`ANTHROPIC_API_KEY = …` sets a value")
                && e.contains("pass = [\"ANTHROPIC_API_KEY\"]"),
            "{e}"
        );
        assert!(
            !e.contains("sk-ant-secret"),
            "the value is never shown: {e}"
        );
        for (text, want) in [
            (
                "[agent.env]\npass = [\"API_KEY=sk-1\"]\n",
                "berth.toml:2:1: key `agent.env.pass`: entry 1 is not an environment variable's name",
            ),
            (
                "[agent]\nenv = [\"1X\"]\n",
                "berth.toml:2:1: key `agent.env.pass`: entry 1 is not",
            ),
            ("[agent.env]\npass = \"X\"\n", "invalid type"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains("sk-1"), "{text:?}: {e}");
        }
    }
}
