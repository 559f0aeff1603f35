//! Who a commit is by, and the trailers berth writes.
//!
//! Runtime commits are authored by the agent (`<agent>[bot] <agent@berth.local>`
//! unless configured) with a `Co-authored-by:` trailer for the person it works
//! for, and a `Berth-Action:` trailer carrying the action id: the id is how a
//! retried commit finds the one it already made. Trailers go in the message's
//! last paragraph, where `git interpret-trailers` and libgit2 look for them.

use git2::Signature;

use crate::error::{Error, Op, Result};
use crate::names::AgentName;

/// The trailer key holding the id of the action that made a commit.
pub const ACTION_TRAILER: &str = "Berth-Action";

const CO_AUTHOR_TRAILER: &str = "Co-authored-by";

/// A name and an email for a commit (author, committer or co-author).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    name: String,
    email: String,
}

impl Identity {
    /// Validates a name and an email: both non-empty, on one line, without
    /// `<` or `>`; the email without spaces.
    pub fn new(name: impl Into<String>, email: impl Into<String>) -> Result<Identity> {
        let (name, email) = (name.into(), email.into());
        check_part("identity name", &name, false)?;
        check_part("identity email", &email, true)?;
        Ok(Identity { name, email })
    }

    /// The default identity of an agent: `<agent>[bot] <agent@berth.local>`.
    pub fn for_agent(agent: &AgentName) -> Identity {
        // Agent names are [A-Za-z0-9._-]: always a valid identity.
        Identity {
            name: format!("{agent}[bot]"),
            email: format!("{agent}@berth.local"),
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The email.
    pub fn email(&self) -> &str {
        &self.email
    }

    pub(crate) fn signature(&self, op: Op) -> Result<Signature<'static>> {
        Signature::now(&self.name, &self.email).map_err(|e| Error::InvalidInput {
            op,
            field: "identity",
            value: format!("{} <{}>", self.name, self.email),
            reason: e.message().to_owned(),
        })
    }
}

fn check_part(field: &'static str, value: &str, is_email: bool) -> Result<()> {
    let reason = if value.trim().is_empty() {
        Some("it is empty")
    } else if value.len() > 256 {
        Some("it is longer than 256 bytes")
    } else if value.chars().any(|c| c.is_control()) {
        Some("it contains a control character or a line break")
    } else if value.contains(['<', '>']) {
        Some("it contains '<' or '>'")
    } else if is_email && value.contains(char::is_whitespace) {
        Some("it contains whitespace")
    } else if value != value.trim() {
        Some("it has leading or trailing whitespace")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidInput {
            op: Op::Commit,
            field,
            value: value.to_owned(),
            reason: reason.to_owned(),
        }),
    }
}

/// Checks an action id: 1 to 128 visible ASCII characters.
pub(crate) fn check_action_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 128 || !id.chars().all(|c| c.is_ascii_graphic()) {
        return Err(Error::InvalidInput {
            op: Op::Commit,
            field: "action id",
            value: id.to_owned(),
            reason: "use 1 to 128 visible ASCII characters (no spaces)".to_owned(),
        });
    }
    Ok(())
}

/// The full commit message: `message` cleaned up, with the co-author and
/// action trailers in its last paragraph.
pub(crate) fn compose_message(
    message: &str,
    co_author: Option<&Identity>,
    action_id: &str,
) -> Result<String> {
    let invalid = |reason: &str| Error::InvalidInput {
        op: Op::Commit,
        field: "message",
        value: message.to_owned(),
        reason: reason.to_owned(),
    };
    let mut body = git2::message_prettify(message, None).map_err(|e| invalid(e.message()))?;
    if body.trim().is_empty() {
        return Err(invalid("it is empty; say what the commit does"));
    }
    if action_trailers(&body).next().is_some() {
        return Err(invalid(
            "it already has a Berth-Action trailer; berth adds it from the action id",
        ));
    }
    let mut trailers = String::new();
    if let Some(who) = co_author {
        trailers.push_str(&format!(
            "{CO_AUTHOR_TRAILER}: {} <{}>\n",
            who.name, who.email
        ));
    }
    trailers.push_str(&format!("{ACTION_TRAILER}: {action_id}\n"));
    // Join an existing trailer paragraph; otherwise start one.
    let has_trailers = body.trim_end().contains("\n\n")
        && git2::message_trailers_strs(&body).is_ok_and(|t| t.len() > 0);
    if !has_trailers {
        body.push('\n');
    }
    body.push_str(&trailers);
    Ok(body)
}

/// The values of the action trailers of a commit message.
pub(crate) fn action_trailers(message: &str) -> impl Iterator<Item = String> {
    let values: Vec<String> = match git2::message_trailers_strs(message) {
        Ok(trailers) => trailers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(ACTION_TRAILER))
            .map(|(_, v)| v.trim().to_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    values.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_validated() {
        let table: &[(&str, &str, bool)] = &[
            ("dev-1[bot]", "dev-1@berth.local", true),
            ("Ada Lovelace", "ada@example.com", true),
            ("", "a@b", false),
            ("x", "", false),
            ("<x>", "a@b", false),
            ("x", "a b@c", false),
            ("x\ny", "a@b", false),
            (" x", "a@b", false),
        ];
        for (name, email, ok) in table {
            assert_eq!(
                Identity::new(*name, *email).is_ok(),
                *ok,
                "{name:?} {email:?}"
            );
        }
        let agent = AgentName::new("dev-1").unwrap();
        assert_eq!(
            Identity::for_agent(&agent),
            Identity::new("dev-1[bot]", "dev-1@berth.local").unwrap()
        );
    }

    #[test]
    fn trailers_land_in_the_last_paragraph() {
        let ada = Identity::new("Ada", "ada@example.com").unwrap();
        let table: &[(&str, Option<&Identity>, &str)] = &[
            (
                "Add a file",
                Some(&ada),
                "Add a file\n\nCo-authored-by: Ada <ada@example.com>\nBerth-Action: a-1\n",
            ),
            (
                "Add a file\n\n\n",
                None,
                "Add a file\n\nBerth-Action: a-1\n",
            ),
            (
                "Subject\n\nBody text.",
                None,
                "Subject\n\nBody text.\n\nBerth-Action: a-1\n",
            ),
            (
                "Subject\n\nBody.\n\nSigned-off-by: X <x@y>",
                Some(&ada),
                "Subject\n\nBody.\n\nSigned-off-by: X <x@y>\nCo-authored-by: Ada <ada@example.com>\nBerth-Action: a-1\n",
            ),
            // A subject that looks like a trailer is still the subject.
            (
                "Fix: the thing",
                None,
                "Fix: the thing\n\nBerth-Action: a-1\n",
            ),
        ];
        for (message, co, want) in table {
            let got = compose_message(message, *co, "a-1").unwrap();
            assert_eq!(&got, want, "{message:?}");
            assert_eq!(
                action_trailers(&got).collect::<Vec<_>>(),
                vec!["a-1".to_owned()]
            );
        }
    }

    #[test]
    fn bad_messages_and_action_ids_are_refused() {
        assert!(compose_message("  \n\n", None, "a").is_err());
        assert!(compose_message("x\n\nBerth-Action: other", None, "a").is_err());
        for id in ["", "has space", "new\nline", &"x".repeat(129)] {
            assert!(check_action_id(id).is_err(), "{id:?}");
        }
        assert!(check_action_id("01J9ZK-action:42").is_ok());
    }
}
