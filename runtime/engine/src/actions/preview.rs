//! What a pending `file_write` would replace, for the person deciding on
//! it: the file as it is now, read through the berth's confined file read
//! (the sandbox opens beneath the mount the path is on and follows no link
//! out of it — the very read a `file_read` action makes), never by a host
//! path the agent can write.

use berth_policy::Action;
use berth_sandbox::{FileActionError, FileContent, SandboxError};

use crate::Engine;
use crate::actions::ActionRecord;
use crate::error::{EngineError, Result};
use crate::execute::file_frame_path;

/// The current content at a pending write's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteBase {
    /// No file there: the write creates it.
    Absent,
    /// The file's text.
    Text(String),
    /// The file is not UTF-8 text: its size in bytes.
    Binary(u64),
    /// It could not be read (the berth is down, a directory, a link out of
    /// the mount, too large): why, for the card.
    Unreadable(String),
}

impl Engine {
    /// The file a pending `file_write` would replace, read in its agent's
    /// berth; `None` for any other action.
    pub async fn file_write_base(&self, record: &ActionRecord) -> Result<Option<WriteBase>> {
        let Action::FileWrite { path } = &record.action else {
            return Ok(None);
        };
        let agent = self.agent(&record.agent).await?;
        let project = self.load_project(&record.project).await?;
        let Some(sb) = self.sandbox_for(&agent, &project.config, false).await? else {
            return Ok(Some(WriteBase::Unreadable(format!(
                "the berth of {} is down: the current file cannot be read",
                agent.name
            ))));
        };
        let frame_path = file_frame_path(sb.as_ref(), record, path);
        Ok(Some(match sb.read_file(&frame_path).await {
            Ok(read) => match read.content {
                FileContent::File(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => WriteBase::Text(text),
                    Err(e) => WriteBase::Binary(e.as_bytes().len() as u64),
                },
                FileContent::Listing(_) => {
                    WriteBase::Unreadable(format!("{frame_path} is a directory"))
                }
            },
            Err(SandboxError::File(FileActionError::Io { source, .. }))
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                WriteBase::Absent
            }
            Err(e) => WriteBase::Unreadable(EngineError::from(e).to_string()),
        }))
    }
}
