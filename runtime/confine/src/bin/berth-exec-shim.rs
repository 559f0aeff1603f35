//! `berth-exec-shim -- PROGRAM [ARG...]`, its spec framed on stdin: sets up
//! the confinement of one runner exec in the child and runs the command in it
//! (see `berth_confine::shim`). Later a subcommand of `berth-helper`.

fn main() -> std::process::ExitCode {
    berth_confine::main_from_args(std::env::args_os())
}
