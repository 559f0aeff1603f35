//! Shell parsing: from a command line to a syntax tree.
//!
//! See [`parser`] for why the parser is hand-written. [`word`] turns words
//! into the strings bash would pass to a program (quote removal, brace
//! expansion) or says why it cannot.

pub mod ast;
pub mod brace;
pub mod parser;
pub mod word;

pub use parser::{MAX_DEPTH, ParseError, Script, parse};
