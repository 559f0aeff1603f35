//! The arguments of `berth mcp`'s tools (stdio and the per-turn HTTP
//! endpoint alike): their schemas, and the checks beyond the schema that
//! make a call a tool error saying what to pass instead, before anything
//! is proposed.

use std::borrow::Cow;

use rmcp::model::CallToolResult;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

use super::tool_error;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunCommandArgs {
    /// The shell command line to run in the berth (compound lines are judged segment by segment).
    pub command: String,
    /// Working directory in the berth's frame, an absolute path under /work (default: /work).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Deadline in seconds, 1 to 86400; the whole process tree is killed after it (default: the project's sandbox.timeout_secs).
    #[serde(default)]
    #[schemars(range(min = 1, max = 86400))]
    pub timeout_secs: Option<u64>,
    /// What the command is for, in a sentence (shown to the person who approves it; never changes the decision).
    #[serde(default)]
    pub description: Option<String>,
}

/// The longest `description` a proposal carries, in characters.
const MAX_DESCRIPTION: usize = 2_000;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PathArgs {
    /// A path in the berth's frame: absolute (/work/src/lib.rs) or relative to /work.
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFilesArgs {
    /// A directory in the berth's frame: absolute or relative to /work (default: /work).
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// A path in the berth's frame: absolute (/work/src/lib.rs) or relative to /work. Parent directories are created.
    pub path: String,
    /// The file's whole new content (UTF-8 text).
    pub content: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommitArgs {
    /// The commit message.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenPrArgs {
    /// The pull request's title.
    pub title: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ActionStatusArgs {
    /// The action id a pending result gave (or a unique prefix of at least 4 characters).
    pub id: String,
}

/// A tool's arguments as the client sent them: deserialised here rather
/// than by rmcp, so arguments that do not fit the schema are a tool error
/// with the same structured content as every other (rmcp's own is not).
/// Its schema is `T`'s.
pub struct Checked<T>(Result<T, String>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(Checked(T::deserialize(value).map_err(|e| e.to_string())))
    }
}

impl<T: JsonSchema> JsonSchema for Checked<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// The longest deadline a command may ask for: a day. Longer is a mistake
/// (or an attempt to outlive every person watching), not a plan.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// What is wrong with a tool's arguments beyond their schema, if anything:
/// what the tool cannot act on, said so the agent can fix it.
pub(super) trait ArgsProblem {
    fn problem(&self) -> Option<String>;
}

pub(super) fn nul_in(field: &str, value: &str) -> Option<String> {
    value.contains('\0').then(|| {
        format!("`{field}` contains a NUL byte, which no command line, path or git message can hold: remove it")
    })
}

pub(super) fn blank(field: &str, value: &str, what: &str) -> Option<String> {
    value
        .trim()
        .is_empty()
        .then(|| format!("`{field}` is empty: {what}"))
}

impl ArgsProblem for RunCommandArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "command",
            &self.command,
            "pass the shell command line to run (e.g. `ls -la`)",
        )
        .or_else(|| nul_in("command", &self.command))
        .or_else(|| {
            let cwd = self.cwd.as_deref()?;
            nul_in("cwd", cwd).or_else(|| {
                (!cwd.starts_with('/')).then(|| {
                    format!(
                        "`cwd` must be an absolute path in your berth's frame (e.g. /work/src), not `{cwd}`; leave it out for /work"
                    )
                })
            })
        })
        .or_else(|| {
            let d = self.description.as_deref()?;
            nul_in("description", d).or_else(|| {
                let n = d.chars().count();
                (n > MAX_DESCRIPTION).then(|| {
                    format!(
                        "`description` is {n} characters, at most {MAX_DESCRIPTION}: say what the command is for in a sentence"
                    )
                })
            })
        })
        .or_else(|| match self.timeout_secs {
            Some(0) => Some(
                "`timeout_secs` must be at least 1 (seconds); leave it out for the project's default"
                    .to_string(),
            ),
            Some(t) if t > MAX_TIMEOUT_SECS => Some(format!(
                "`timeout_secs` is at most {MAX_TIMEOUT_SECS} (a day), not {t}; leave it out for the project's default"
            )),
            _ => None,
        })
    }
}

impl ArgsProblem for PathArgs {
    fn problem(&self) -> Option<String> {
        blank("path", &self.path, "name a file, e.g. /work/README.md")
            .or_else(|| nul_in("path", &self.path))
    }
}

impl ArgsProblem for ListFilesArgs {
    fn problem(&self) -> Option<String> {
        nul_in("path", self.path.as_deref()?)
    }
}

impl ArgsProblem for WriteFileArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "path",
            &self.path,
            "name the file to write, e.g. /work/notes.txt",
        )
        .or_else(|| nul_in("path", &self.path))
    }
}

impl ArgsProblem for CommitArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "message",
            &self.message,
            "give the commit a message saying what the change does",
        )
        .or_else(|| nul_in("message", &self.message))
    }
}

impl ArgsProblem for OpenPrArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "title",
            &self.title,
            "give the pull request a title saying what it changes",
        )
        .or_else(|| nul_in("title", &self.title))
    }
}

impl ArgsProblem for NoArgs {
    fn problem(&self) -> Option<String> {
        None
    }
}

impl ArgsProblem for ActionStatusArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "id",
            &self.id,
            "pass the action id a pending result gave (action_id)",
        )
    }
}

/// The arguments, or the tool error that says what is wrong with them.
pub(super) fn accept<T: ArgsProblem>(
    tool: &str,
    Checked(args): Checked<T>,
) -> Result<T, CallToolResult> {
    let args = args.map_err(|e| {
        tool_error(&format!(
            "invalid arguments for {tool}: {e} (see the tool's inputSchema); nothing was proposed"
        ))
    })?;
    match args.problem() {
        Some(p) => Err(tool_error(&format!(
            "invalid arguments for {tool}: {p}; nothing was proposed"
        ))),
        None => Ok(args),
    }
}
