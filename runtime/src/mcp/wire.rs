//! The stdio line gate in front of rmcp: what JSON-RPC 2.0 and the MCP
//! specification require of a server that rmcp's stdio transport does not do
//! itself, decided line by line before rmcp sees a message.
//!
//! - A line that is not JSON is answered `-32700 Parse error` with
//!   `"id": null` (JSON-RPC 2.0 §5.1: "Invalid JSON was received by the
//!   server"; §5: "If there was an error in detecting the id in the Request
//!   object (e.g. Parse error/Invalid Request), it MUST be Null"). rmcp drops
//!   such a line without an answer.
//! - A batch (a JSON array) is answered `-32600 Invalid Request`, `"id":
//!   null`: berth speaks MCP 2025-06-18 and later, whose changelog says
//!   "Remove support for JSON-RPC batching", and never negotiates 2025-03-26,
//!   the one revision that required servers to receive batches (see
//!   `SUPPORTED_VERSIONS` in `mcp.rs`).
//! - A message that is no JSON-RPC 2.0 request, notification or response (no
//!   `"jsonrpc": "2.0"`, an `id` that is not a string or integer, neither
//!   `method` nor `result`/`error`) is answered `-32600` with its id when it
//!   has one (rmcp answers these without any id); a request whose params are
//!   not an object, or whose `_meta` is not, `-32602`.
//! - A `tools/call` request whose params do not fit `CallToolRequest` (no
//!   `name`, `arguments` that is not an object, a tool that does not exist)
//!   is answered `-32602 Invalid params` with a message saying what is wrong;
//!   rmcp answers some of these `-32601` (it cannot tell the method from its
//!   params). Arguments that are an object but do not fit the tool's input
//!   schema stay tool errors (`isError`), as MCP 2025-11-25 asks (SEP-1303).
//!
//! Every other line goes to rmcp unchanged, through an in-process pipe; its
//! answers come back through the same pipe and share stdout with the gate's,
//! one whole line at a time.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

/// JSON-RPC 2.0's reserved error codes the gate answers with.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;

/// What the gate makes of one input line.
#[derive(Debug, PartialEq)]
pub enum LineVerdict {
    /// rmcp handles it.
    Forward,
    /// The gate answers it with this message; rmcp never sees it.
    Answer(Value),
    /// Nothing to do (a blank line, or a notification the gate rejects:
    /// notifications get no answer, not even an error).
    Drop,
}

fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Judges one line (without its newline). `tools` are the server's tool names.
pub fn judge(line: &[u8], tools: &[String]) -> LineVerdict {
    if line.iter().all(u8::is_ascii_whitespace) {
        return LineVerdict::Drop;
    }
    let message: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return LineVerdict::Answer(error(
                Value::Null,
                PARSE_ERROR,
                format!(
                    "Parse error: the line is not JSON ({e}); send one JSON-RPC message per line"
                ),
            ));
        }
    };
    let object = match message {
        Value::Object(o) => o,
        Value::Array(_) => {
            return LineVerdict::Answer(error(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: JSON-RPC batches are not accepted; berth speaks MCP 2025-06-18 and later, \
                 which removed batching: send one message per line"
                    .to_string(),
            ));
        }
        _ => {
            return LineVerdict::Answer(error(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: a JSON-RPC message is a JSON object".to_string(),
            ));
        }
    };
    // The id an answer carries: the request's when it is one (MCP: "Requests
    // MUST include a string or integer ID"), else null (JSON-RPC 2.0 §5).
    let id = match object.get("id") {
        None => None,
        Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
        Some(other) => {
            return LineVerdict::Answer(error(
                Value::Null,
                INVALID_REQUEST,
                format!(
                    "Invalid Request: `id` must be a string or an integer, not {}",
                    json_kind(other)
                ),
            ));
        }
    };
    let invalid = |message: String| match &id {
        Some(id) => LineVerdict::Answer(error(id.clone(), INVALID_REQUEST, message)),
        None => LineVerdict::Answer(error(Value::Null, INVALID_REQUEST, message)),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(r#"Invalid Request: `jsonrpc` must be "2.0""#.to_string());
    }
    let method = match object.get("method") {
        // A response (to a request of the server's): rmcp's business.
        None if object.contains_key("result") || object.contains_key("error") => {
            return LineVerdict::Forward;
        }
        None => {
            return invalid(
                "Invalid Request: a message has a `method` (a request or notification) or a `result` or `error` (a response)"
                    .to_string(),
            );
        }
        Some(Value::String(m)) => m.as_str(),
        Some(other) => {
            return invalid(format!(
                "Invalid Request: `method` must be a string, not {}",
                json_kind(other)
            ));
        }
    };
    let problem = params_problem(object.get("params")).or_else(|| {
        (method == "tools/call")
            .then(|| call_params_problem(object.get("params"), tools))
            .flatten()
    });
    match (problem, id) {
        (None, _) => LineVerdict::Forward,
        // A notification gets no answer, not even an error.
        (Some(_), None) => LineVerdict::Drop,
        (Some(problem), Some(id)) => LineVerdict::Answer(error(
            id,
            INVALID_PARAMS,
            format!("Invalid params for {method}: {problem}"),
        )),
    }
}

/// What is wrong with any request's params: MCP's are an object (`params?:
/// { [key: string]: unknown }`) whose `_meta`, if any, is an object.
fn params_problem(params: Option<&Value>) -> Option<String> {
    match params {
        None | Some(Value::Null) => None,
        Some(Value::Object(p)) => match p.get("_meta") {
            None | Some(Value::Null) | Some(Value::Object(_)) => None,
            Some(other) => Some(format!(
                "`_meta` must be an object, not {}",
                json_kind(other)
            )),
        },
        Some(other) => Some(format!(
            "params must be an object, not {}",
            json_kind(other)
        )),
    }
}

/// What is wrong with a `tools/call` request's params, if anything
/// (`CallToolRequestParams`: `name` a string, `arguments` an optional object).
fn call_params_problem(params: Option<&Value>, tools: &[String]) -> Option<String> {
    let list = tools.join(", ");
    let Some(Value::Object(params)) = params else {
        return Some(format!(
            "params must be an object with `name` (the tool: one of {list}) and `arguments` (an object)"
        ));
    };
    match params.get("name") {
        None => {
            return Some(format!(
                "`name` is missing: name the tool to call (one of {list})"
            ));
        }
        Some(Value::String(name)) if !tools.iter().any(|t| t == name) => {
            return Some(format!("unknown tool `{name}`: the tools are {list}"));
        }
        Some(Value::String(_)) => {}
        Some(other) => {
            return Some(format!(
                "`name` must be a string naming the tool (one of {list}), not {}",
                json_kind(other)
            ));
        }
    }
    match params.get("arguments") {
        None | Some(Value::Null) | Some(Value::Object(_)) => None,
        Some(other) => Some(format!(
            "`arguments` must be an object of the tool's parameters (see its inputSchema), not {}",
            json_kind(other)
        )),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The gate between `input`/`output` (the process's stdin and stdout) and
/// rmcp, which gets the returned pipe end. The handle ends once rmcp's last
/// answer is on `output`: await it after the service stops.
pub fn gate<I, O>(input: I, output: O, tools: Vec<String>) -> (DuplexStream, JoinHandle<()>)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, rmcp) = tokio::io::duplex(1 << 16);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
    let output = Arc::new(Mutex::new(output));
    let out_in = output.clone();
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            let verdict = match read_line(&mut input, &mut line, MAX_LINE_BYTES).await {
                LineRead::End => break,
                LineRead::TooLong => LineVerdict::Answer(error(
                    Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: the message is longer than {MAX_LINE_BYTES} bytes and was dropped"
                    ),
                )),
                LineRead::Line => judge(&line, &tools),
            };
            let body = &line;
            match verdict {
                LineVerdict::Forward => {
                    let sent = async {
                        to_rmcp.write_all(body).await?;
                        to_rmcp.write_all(b"\n").await?;
                        to_rmcp.flush().await
                    };
                    if sent.await.is_err() {
                        break;
                    }
                }
                LineVerdict::Answer(answer) => {
                    if write_line(&out_in, &answer.to_string()).await.is_err() {
                        break;
                    }
                }
                LineVerdict::Drop => {}
            }
        }
        // rmcp reads the end of its input; its answers still come back.
        let _ = to_rmcp.shutdown().await;
    });
    let answers = tokio::spawn(async move {
        let mut lines = BufReader::new(from_rmcp).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if write_line(&output, &line).await.is_err() {
                break;
            }
        }
    });
    (rmcp, answers)
}

/// The longest message the gate takes (rmcp's own cap on a stdio line).
pub const MAX_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

enum LineRead {
    /// A line (without its newline) is in the buffer.
    Line,
    /// The line was longer than the cap: it was read to its end and dropped.
    TooLong,
    /// The input ended (or failed).
    End,
}

/// Reads one line into `line` (cleared first) without holding more than
/// `max` bytes of it: a peer that never sends a newline cannot grow it.
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> LineRead {
    line.clear();
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf().await {
            Ok(b) => b,
            Err(_) => return LineRead::End,
        };
        if buf.is_empty() {
            // A last line without its newline still counts.
            return match (too_long, line.is_empty()) {
                (true, _) => LineRead::TooLong,
                (false, true) => LineRead::End,
                (false, false) => LineRead::Line,
            };
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line.clear();
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            };
        }
    }
}

async fn write_line<O: AsyncWrite + Unpin>(output: &Mutex<O>, line: &str) -> std::io::Result<()> {
    let mut out = output.lock().await;
    out.write_all(line.as_bytes()).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn lines_longer_than_the_cap_are_dropped_whole() {
        let input = b"{\"a\":1}\n0123456789abcdef\n{}\nlast".to_vec();
        let mut reader = BufReader::with_capacity(4, &input[..]);
        let mut line = Vec::new();
        let mut got = Vec::new();
        loop {
            match read_line(&mut reader, &mut line, 10).await {
                LineRead::End => break,
                LineRead::TooLong => got.push("too long".to_string()),
                LineRead::Line => got.push(String::from_utf8(line.clone()).unwrap()),
            }
        }
        assert_eq!(got, ["{\"a\":1}", "too long", "{}", "last"]);
    }

    /// The answer a line gets: its id, error code and a part of its message.
    type Answered = Option<(Value, i64, &'static str)>;

    #[test]
    fn lines_are_forwarded_answered_or_dropped() {
        let tools = vec!["run_command".to_string(), "read_file".to_string()];
        // (line, None = forwarded / dropped, Some((id, code, message fragment)))
        let cases: [(&str, Answered); 17] = [
            (r#"{"jsonrpc":"2.0","id":9,"result":{}}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}"#,
                Some((
                    json!(1),
                    INVALID_PARAMS,
                    "params must be an object, not a string",
                )),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":5}}"#,
                Some((json!(1), INVALID_PARAMS, "`_meta` must be an object")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Some((
                    Value::Null,
                    INVALID_REQUEST,
                    "`id` must be a string or an integer",
                )),
            ),
            (
                r#"{"jsonrpc":"1.0","id":4,"method":"ping"}"#,
                Some((json!(4), INVALID_REQUEST, "`jsonrpc` must be")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":5}"#,
                Some((json!(5), INVALID_REQUEST, "a message has a `method`")),
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}}"#,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file"}}"#,
                None,
            ),
            ("{not json", Some((Value::Null, PARSE_ERROR, "Parse error"))),
            ("\u{ff}", Some((Value::Null, PARSE_ERROR, "not JSON"))),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Some((Value::Null, INVALID_REQUEST, "batches are not accepted")),
            ),
            ("[]", Some((Value::Null, INVALID_REQUEST, "batches"))),
            ("7", Some((Value::Null, INVALID_REQUEST, "JSON object"))),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"run_command","arguments":"ls"}}"#,
                Some((json!("x"), INVALID_PARAMS, "`arguments` must be an object")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#,
                Some((json!(2), INVALID_PARAMS, "`name` is missing")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm"}}"#,
                Some((json!(3), INVALID_PARAMS, "unknown tool `rm`")),
            ),
        ];
        for (line, want) in cases {
            let got = judge(line.as_bytes(), &tools);
            match (want, got) {
                (None, LineVerdict::Forward) => {}
                (Some((id, code, fragment)), LineVerdict::Answer(a)) => {
                    assert_eq!(
                        (&a["id"], &a["error"]["code"]),
                        (&id, &json!(code)),
                        "{line}"
                    );
                    assert!(
                        a["error"]["message"].as_str().unwrap().contains(fragment),
                        "{line}: {a}"
                    );
                }
                (want, got) => panic!("{line}: want {want:?}, got {got:?}"),
            }
        }
        // A notification gets no answer, even a malformed one.
        let note = r#"{"jsonrpc":"2.0","method":"tools/call","params":7}"#;
        assert_eq!(judge(note.as_bytes(), &tools), LineVerdict::Drop);
        assert_eq!(judge(b"  ", &tools), LineVerdict::Drop);
    }
}
