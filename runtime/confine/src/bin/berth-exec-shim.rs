//! `berth-exec-shim -- PROGRAM [ARG...]`, its spec framed on stdin: sets up
//! the confinement of one runner exec in the child and runs the command in it
//! (see `berth_confine::shim`); `berth-exec-shim --resident` is a runner
//! berth's resident (see `berth_confine::resident`). Later a subcommand of `berth-helper`.

fn main() -> std::process::ExitCode {
    let resident = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == berth_confine::resident::RESIDENT_ARG);
    if resident {
        berth_confine::resident::main_from_args(std::env::args_os())
    } else {
        berth_confine::main_from_args(std::env::args_os())
    }
}
